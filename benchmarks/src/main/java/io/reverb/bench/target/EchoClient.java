package io.reverb.bench.target;

import com.google.protobuf.BytesValue;

/**
 * A connected client of {@link io.reverb.bench.EchoService}, the same shape for every framework,
 * so that the load generator and the JMH benchmarks drive Reverb and grpc-java through one code path.
 */
public interface EchoClient extends AutoCloseable
{
    /**
     * Calls {@code Echo} and waits for its answer, through the framework's own blocking API.
     *
     * @param request request message.
     * @return the response.
     * @throws RuntimeException the framework's error if the call fails.
     */
    BytesValue blockingEcho(BytesValue request);

    /**
     * Calls {@code Stream} and consumes every message, through the framework's own blocking API.
     *
     * @param request an encoded {@link io.reverb.bench.EchoService.StreamRequest}.
     * @return the number of messages received.
     * @throws RuntimeException the framework's error if the call fails.
     */
    long blockingStream(BytesValue request);

    /**
     * @param observer receives the outcome of every call made through the returned caller.
     * @return a caller whose calls are reported to {@code observer}.
     */
    Caller newCaller(CallObserver observer);

    /**
     * @return the fabric the calls travel over now ({@code RpcChannel.fabric()}: shm, tcp, rdma, inproc), or null
     * where the framework does not say (grpc-java).
     */
    default String fabric()
    {
        return null;
    }

    /**
     * Closes the channel; calls in flight fail.
     */
    @Override
    void close();

    /**
     * Issues asynchronous calls, each reported to the observer it was created with.
     */
    interface Caller
    {
        /**
         * Starts a unary {@code Echo} call.
         *
         * @param request request message.
         */
        void echo(BytesValue request);

        /**
         * Starts a server-streaming {@code Stream} call.
         *
         * @param request an encoded {@link io.reverb.bench.EchoService.StreamRequest}.
         */
        void stream(BytesValue request);
    }
}
