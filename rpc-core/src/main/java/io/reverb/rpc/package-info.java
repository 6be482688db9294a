/**
 * Reverb's RPC API: {@link io.reverb.rpc.RpcServer}, {@link io.reverb.rpc.RpcChannel}, {@link io.reverb.rpc.Status},
 * {@link io.reverb.rpc.Metadata}, {@link io.reverb.rpc.MethodDescriptor}, {@link io.reverb.rpc.Marshaller},
 * interceptors and deadlines. It reads like gRPC-java and behaves like Reactor:
 *
 * <ul>
 *   <li>calls are lazy ({@code Mono}/{@code Flux}): nothing is sent before subscription;</li>
 *   <li>disposing a subscription sends CANCEL and the server handler's publisher is cancelled;</li>
 *   <li>{@code request(n)} travels as REQUEST_N, both ways, so a slow consumer holds a fast producer back;</li>
 *   <li>deadlines travel with the call and end it on both sides with DEADLINE_EXCEEDED.</li>
 * </ul>
 *
 * <h2>Threading</h2>
 * Frames arrive on the transport's thread (for RDMA: the completion poller), and server handlers run there unless
 * the server has a {@link io.reverb.rpc.RpcServer.Builder#scheduler scheduler}: blocking in a handler on the
 * transport's thread stalls every call it serves. Responses are delivered to client subscribers on the transport's
 * thread too; use {@code publishOn} before blocking work.
 */
package io.reverb.rpc;
