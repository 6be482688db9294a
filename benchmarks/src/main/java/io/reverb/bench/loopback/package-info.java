/**
 * rpc-core measured alone: {@code loopback://}, a same-thread transport with no cost of its own to speak of, and
 * {@link io.reverb.bench.loopback.RpcCostProbe}, which counts CPU time and allocation per native unary call over it.
 */
package io.reverb.bench.loopback;
