package io.reverb.rdma.provider.disni;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import reactor.core.publisher.Mono;

/**
 * The child JVM of {@link NativeAccessWarningsTest}: what a user's application does with Reverb, whose stderr the test
 * reads. It makes one call over {@code shm://} and runs the {@code rdma://} native loader (Reverb's
 * {@code NativeDispatcher}, whose static initialiser calls {@code System.load}), then prints what happened on stdout.
 * The class path must list the main classes before the test classes (the test scope shadows the dispatcher).
 */
public final class NativeAccessWarningsChild
{
    /** Printed once the shm:// call returned. */
    static final String SHM_OK = "shm call: ok";
    /** Printed, followed by the outcome, once the native loader ran. */
    static final String NATIVE_RAN = "native loader ran: ";

    private NativeAccessWarningsChild()
    {
    }

    /**
     * @param args the shm:// address to serve and call.
     * @throws Exception when the call fails (the test then sees a non-zero exit).
     */
    public static void main(final String[] args) throws Exception
    {
        final MethodDescriptor<StringValue, StringValue> echo = MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Warnings", "Echo"))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
        final RpcServer server = RpcServer.builder(args[0])
            .addService(ServiceDefinition.builder("reverb.test.Warnings").addMethod(echo, ServerCalls.unary(Mono::just))
                .build())
            .build()
            .start();
        final RpcChannel channel = RpcChannel.builder(args[0]).build();
        try
        {
            final StringValue reply = channel.newUnaryCall(echo, CallOptions.DEFAULT, StringValue.of("hi"))
                .block(Duration.ofSeconds(60));
            if (!StringValue.of("hi").equals(reply))
            {
                throw new IllegalStateException("unexpected reply " + reply);
            }
            System.out.println(SHM_OK);
        }
        finally
        {
            channel.close();
            server.shutdown(Duration.ZERO);
            server.awaitTermination(Duration.ofSeconds(30));
        }

        String outcome;
        try
        {
            // Reverb's dispatcher, from the main classes: its static initialiser is the System.load a user's first
            // rdma:// channel or server runs
            Class.forName(MainDispatcherClass.NAME, true, NativeAccessWarningsChild.class.getClassLoader());
            outcome = "loaded";
        }
        catch (final Throwable t)
        {
            // a host without rdma-core's libraries: System.load was still called (and warned) before it failed
            outcome = "failed: " + t;
        }
        System.out.println(NATIVE_RAN + outcome);
        System.out.flush();
    }
}
