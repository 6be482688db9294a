/**
 * Wires rpc-core's API ({@code io.reverb.rpc}) to its implementation, found by {@link java.util.ServiceLoader} as
 * grpc-java finds its channel providers: the API package imports no implementation package, and this one imports
 * both.
 */
package io.reverb.rpc.impl;
