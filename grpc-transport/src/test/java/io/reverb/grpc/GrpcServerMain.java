package io.reverb.grpc;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;

import java.util.concurrent.TimeUnit;

/**
 * The other JVM of {@link TwoJvmTest}: serves {@link GrpcEchoService} with grpc-java over Reverb at the address
 * given (behind {@link MetadataEcho}), prints {@code READY <bound address>}, and shuts down when its standard input
 * closes.
 */
public final class GrpcServerMain
{
    private GrpcServerMain()
    {
    }

    /**
     * @param args the address to serve, e.g. {@code shm://name}, {@code tcp://127.0.0.1:0}.
     * @throws Exception on failure (exit code 1).
     */
    public static void main(final String[] args) throws Exception
    {
        final Server server = ReverbServerBuilder.forAddress(args[0])
            .addService(ServerInterceptors.intercept(new GrpcEchoService(), new MetadataEcho()))
            .maxInboundMessageSize(AbstractGrpcConformanceTest.MAX_MESSAGE)
            .build()
            .start();
        System.out.println("READY " + server.getListenSockets().get(0));
        System.out.flush();
        while (System.in.read() >= 0)
        {
            // wait for the parent to close our input
        }
        server.shutdown();
        if (!server.awaitTermination(30, TimeUnit.SECONDS))
        {
            server.shutdownNow();
            System.exit(2);
        }
        System.exit(0);
    }

    /**
     * Answers a call's {@code x-ascii} header with the response header {@code x-echoed-ascii} and the trailer
     * {@code x-trailer}, and its {@code x-binary-bin} header with the trailer {@code x-echoed-bin}.
     */
    static final class MetadataEcho implements ServerInterceptor
    {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
            final ServerCall<Q, R> call, final Metadata headers, final ServerCallHandler<Q, R> next)
        {
            final String ascii = headers.get(AbstractGrpcConformanceTest.ASCII_KEY);
            final byte[] binary = headers.get(AbstractGrpcConformanceTest.BINARY_KEY);
            return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call)
            {
                @Override
                public void sendHeaders(final Metadata responseHeaders)
                {
                    if (ascii != null)
                    {
                        responseHeaders.put(AbstractGrpcConformanceTest.ECHOED_ASCII, ascii);
                    }
                    super.sendHeaders(responseHeaders);
                }

                @Override
                public void close(final Status status, final Metadata trailers)
                {
                    if (ascii != null)
                    {
                        trailers.put(AbstractGrpcConformanceTest.TRAILER_ASCII, "trailer of " + ascii);
                    }
                    if (binary != null)
                    {
                        trailers.put(AbstractGrpcConformanceTest.ECHOED_BINARY, binary);
                    }
                    super.close(status, trailers);
                }
            }, headers);
        }
    }
}
