package io.reverb.bench.target;

/**
 * Receives the outcome of one call issued through an {@link EchoClient.Caller}. One observer
 * serves one lane of sequential calls, so the harness allocates nothing per call.
 */
public interface CallObserver
{
    /**
     * A response message arrived (once for unary, once per message for server streaming).
     */
    void onMessage();

    /**
     * The call ended.
     *
     * @param statusCode gRPC status code number (0 is OK).
     * @param error      the failure, or null when {@code statusCode} is 0.
     */
    void onClose(int statusCode, Throwable error);
}
