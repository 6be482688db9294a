package io.reverb.bench.fault;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;

/**
 * The three RPC stacks the fault suite runs side by side: Reverb's native channel and server ({@code native}),
 * grpc-java's channel and server over a Reverb transport ({@code grpc-reverb}), and grpc-java over Netty
 * ({@code grpc-netty}), the reference.
 *
 * <p>All three serve one unary method, {@value #SLOW_FULL_NAME}: the request carries a call id and the time the
 * client gives up on the call (its deadline in epoch milliseconds: client and server share one clock in the suite),
 * two little-endian longs; the handler answers after a fixed delay, so that calls are in flight whenever a fault
 * strikes, and counts the handlers it starts for calls whose client has already given up.
 */
public enum FaultStack
{
    /** Reverb's own {@code RpcChannel} and {@code RpcServer}. */
    NATIVE("native"),
    /** grpc-java's {@code ManagedChannel} and {@code Server} over a Reverb transport (reverb-grpc). */
    GRPC_REVERB("grpc-reverb"),
    /** grpc-java over Netty: the reference (tcp only). */
    GRPC_NETTY("grpc-netty");

    /** Service name. */
    public static final String SERVICE = "reverb.bench.FaultService";
    /** Full name of the one unary method. */
    public static final String SLOW_FULL_NAME = SERVICE + "/Slow";

    private final String cliName;

    FaultStack(final String cliName)
    {
        this.cliName = cliName;
    }

    /**
     * @return the name used on command lines and in reports.
     */
    public String cliName()
    {
        return cliName;
    }

    /**
     * @param name a name as {@link #cliName()} writes it.
     * @return the stack.
     * @throws IllegalArgumentException for an unknown name.
     */
    public static FaultStack parse(final String name)
    {
        for (final FaultStack stack : values())
        {
            if (stack.cliName.equals(name.toLowerCase(Locale.ROOT)))
            {
                return stack;
            }
        }
        throw new IllegalArgumentException("unknown stack '" + name + "' (native, grpc-reverb, grpc-netty)");
    }

    /** Length of a request: the call id and the client's deadline. */
    public static final int REQUEST_LENGTH = 2 * Long.BYTES;

    /**
     * @param id              a call id.
     * @param deadlineEpochMs when the client gives up on the call, in epoch milliseconds.
     * @return the request message carrying them.
     */
    public static BytesValue request(final long id, final long deadlineEpochMs)
    {
        final ByteBuffer buffer = ByteBuffer.allocate(REQUEST_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putLong(id).putLong(deadlineEpochMs).flip();
        return BytesValue.newBuilder().setValue(ByteString.copyFrom(buffer)).build();
    }

    /**
     * @param request a request message.
     * @return the call id it carries.
     * @throws IllegalArgumentException if it is not a fault-suite request.
     */
    public static long id(final BytesValue request)
    {
        return checked(request).getLong(0);
    }

    /**
     * @param request a request message.
     * @return when the client gives up on the call, in epoch milliseconds (client and server share the clock).
     * @throws IllegalArgumentException if it is not a fault-suite request.
     */
    public static long clientDeadline(final BytesValue request)
    {
        return checked(request).getLong(Long.BYTES);
    }

    private static ByteBuffer checked(final BytesValue request)
    {
        final ByteString value = request.getValue();
        if (value.size() != REQUEST_LENGTH)
        {
            throw new IllegalArgumentException("a fault-suite request carries " + REQUEST_LENGTH + " bytes, not " + value.size());
        }
        return value.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * A client of one stack: starts calls with a deadline and reports each call's gRPC status code.
     */
    public interface Client extends AutoCloseable
    {
        /**
         * @param id       the call id (sent to the server).
         * @param deadline the call's deadline, from now.
         * @return completes with the call's outcome; never exceptionally.
         */
        CompletableFuture<Outcome> call(long id, Duration deadline);

        /**
         * @return the transport's registered buffers in use in this process, or -1 where there are none to count
         *         (Netty).
         */
        long buffersInUse();

        /**
         * Closes the channel and waits (bounded) for it to terminate.
         */
        @Override
        void close();
    }

    /**
     * How a call ended.
     *
     * @param code        its gRPC status code (0 for OK).
     * @param description the status's description, or null.
     */
    public record Outcome(int code, String description)
    {
        /** A successful call. */
        public static final Outcome OK = new Outcome(0, null);
    }

    /**
     * A started server of one stack.
     */
    public interface Server
    {
        /**
         * Starts a graceful shutdown: no new calls, calls running may finish within {@code grace}.
         *
         * @param grace how long running calls may take.
         */
        void shutdown(Duration grace);

        /**
         * @param timeout how long to wait.
         * @return true if the server terminated within {@code timeout}.
         * @throws InterruptedException if interrupted.
         */
        boolean awaitTermination(Duration timeout) throws InterruptedException;

        /**
         * Cancels whatever still runs.
         */
        void shutdownNow();

        /**
         * @return the transport's registered buffers in use in this process, or -1 where there are none to count.
         */
        long buffersInUse();
    }
}
