/**
 * Internal: finds and extracts the native half of DiSNi 2.1 that reverb-transport-rdma ships (see
 * {@link io.reverb.rdma.provider.disni.nativelib.NativeLibrary}). A package of its own, depending on nothing else of
 * Reverb's, because {@code com.ibm.disni.verbs.impl.NativeDispatcher} calls it and the provider calls DiSNi.
 */
package io.reverb.rdma.provider.disni.nativelib;
