/**
 * Micrometer Observation instrumentation of Reverb calls: one {@link io.micrometer.observation.Observation} per call
 * on each side, with low-cardinality keys after OpenTelemetry's RPC semantic conventions, and the trace context
 * carried in the call's metadata.
 *
 * <pre>{@code
 * ObservationRegistry observations = ...; // e.g. Spring Boot's, or one with micrometer-tracing's handlers
 * RpcServer server = RpcServer.builder("shm://greeter").addService(service)
 *     .intercept(new ObservationServerInterceptor(observations)).build().start();
 * RpcChannel channel = RpcChannel.builder("shm://greeter")
 *     .intercept(new ObservationClientInterceptor(observations)).build();
 * }</pre>
 *
 * <p>With {@code micrometer-tracing-bridge-otel} (or {@code -brave}) handlers in the registry, the client's tracing
 * handler writes W3C {@code traceparent} (and {@code tracestate}, baggage) into the request metadata through
 * {@link io.reverb.rpc.observation.RpcClientObservationContext}'s setter, and the server's reads it back through
 * {@link io.reverb.rpc.observation.RpcServerObservationContext}'s getter, so the server span is a child of the
 * client span, across processes. With a {@code DefaultMeterObservationHandler}, each observation is also a timer
 * ({@code rpc.client.duration}, {@code rpc.server.duration}) tagged with the same keys.
 *
 * <p>Add the interceptor as the first (outermost) one so that it also times the other interceptors. Without these
 * interceptors nothing of this package runs and {@code micrometer-observation} need not be on the class path: calls
 * cost what they cost without instrumentation. See {@link io.reverb.rpc.observation.RpcObservationDocumentation} for
 * the names and keys.
 */
package io.reverb.rpc.observation;
