package io.reverb.bench.cli;

import com.google.protobuf.DynamicMessage;
import io.reverb.services.reflection.ServerReflectionRequest;
import io.reverb.services.reflection.ServerReflectionResponse;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * Where reverb-cli sends its calls: a Reverb URI ({@link ReverbCliTarget}) or a grpc-java server over Netty
 * ({@link GrpcCliTarget}, {@code grpc://host:port}).
 */
public interface CliTarget extends AutoCloseable
{
    /**
     * The most responses {@link #reflect} reads: a conforming server answers one request with one response, so a
     * second shows a misbehaving one; the stream is cancelled there, so a server streaming responses without end
     * cannot fill the client's memory before the deadline.
     */
    int REFLECTION_RESPONSE_LIMIT = 2;

    /**
     * One request on a new {@code grpc.reflection.v1.ServerReflection/ServerReflectionInfo} stream.
     *
     * @param request  the request.
     * @param deadline how long the exchange may take.
     * @return the responses (one, from a conforming server), at most {@link #REFLECTION_RESPONSE_LIMIT}: the stream
     *         is cancelled when that many have come.
     * @throws CallFailure if the stream ends with a status other than OK.
     */
    List<ServerReflectionResponse> reflect(ServerReflectionRequest request, Duration deadline) throws CallFailure;

    /**
     * A unary or server-streaming call.
     *
     * @param method    the method.
     * @param request   the request.
     * @param headers   metadata, as name and value pairs ({@code -bin} names: values base64-encoded).
     * @param deadline  the call's deadline, or null for none.
     * @param responses receives each response, in order, on the calling thread; a {@link CliException} it throws
     *                  ends the call and comes out of this method as it is.
     * @throws CallFailure if the call ends with a status other than OK.
     */
    void call(DynamicMethod method, DynamicMessage request, List<String[]> headers, Duration deadline,
        Consumer<DynamicMessage> responses) throws CallFailure;

    @Override
    void close();

    /**
     * A call that ended with a status other than OK.
     */
    final class CallFailure extends Exception
    {
        private static final long serialVersionUID = 1L;

        private final String code;
        private final String description;
        private final boolean notConnected;

        /**
         * @param code        the status code's name, e.g. {@code NOT_FOUND}.
         * @param description the status's description, or null.
         * @param cause       the transport's exception.
         */
        public CallFailure(final String code, final String description, final Throwable cause)
        {
            this(code, description, cause, false);
        }

        /**
         * @param code         the status code's name, e.g. {@code NOT_FOUND}.
         * @param description  the status's description, or null.
         * @param cause        the transport's exception.
         * @param notConnected whether no connection could be made to send the call on (the server never saw it).
         */
        public CallFailure(final String code, final String description, final Throwable cause,
            final boolean notConnected)
        {
            super(code + ": " + (description == null ? "" : description), cause);
            this.code = code;
            this.description = description == null ? "" : description;
            this.notConnected = notConnected;
        }

        /**
         * @return the status code's name.
         */
        public String code()
        {
            return code;
        }

        /**
         * @return the status's description (empty if none).
         */
        public String description()
        {
            return description;
        }

        /**
         * @return whether the call failed because no connection could be made (UNAVAILABLE, the server never saw it),
         *         as opposed to a server that answered UNAVAILABLE.
         */
        public boolean notConnected()
        {
            return notConnected;
        }
    }
}
