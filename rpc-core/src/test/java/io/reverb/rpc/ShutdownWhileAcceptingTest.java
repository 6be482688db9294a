package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A server shut down while its connection listener runs for a connection it accepted (the listener is told before
 * the transport takes the connection): the shutdown's GOAWAY and close reach that connection before the transport
 * has it. Over {@code inproc://} the server's end got its close before its handler, which dropped it: the server
 * never terminated, the listener was never told of the end, and the client's end, closed before it was attached,
 * stood READY and dead. Now the server terminates, the listener hears of the end, and the client's call ends.
 */
class ShutdownWhileAcceptingTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor
        .<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Accepting", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();

    @Test
    void shouldTerminateAndEndTheCallWhenShutDownWhileTheListenerRuns() throws Exception
    {
        final String uri = "inproc://shutdown-accepting-" + IDS.incrementAndGet();
        final AtomicReference<RpcServer> serverRef = new AtomicReference<>();
        final CountDownLatch closedTold = new CountDownLatch(1);
        final AtomicReference<Throwable> shutdownFailure = new AtomicReference<>();
        final RpcServer server = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Accepting")
                .addMethod(CALL, ServerCalls.<StringValue, StringValue>unary(Mono::just)).build())
            .addConnectionListener(new AcceptedConnection.Listener()
            {
                @Override
                public void connectionAccepted(final AcceptedConnection connection)
                {
                    // another thread shuts the server down, and is done, before the transport takes the connection
                    final Thread shutdown = new Thread(() ->
                    {
                        try
                        {
                            serverRef.get().shutdown();
                        }
                        catch (final Throwable t)
                        {
                            shutdownFailure.set(t);
                        }
                    });
                    shutdown.start();
                    try
                    {
                        shutdown.join(TimeUnit.SECONDS.toMillis(20));
                        Thread.sleep(100); // what the shutdown sent may be delivered meanwhile
                    }
                    catch (final InterruptedException e)
                    {
                        Thread.currentThread().interrupt();
                    }
                }

                @Override
                public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
                {
                    closedTold.countDown();
                }
            }).build();
        serverRef.set(server);
        server.start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final CountDownLatch ended = new CountDownLatch(1);
            final AtomicReference<Object> outcome = new AtomicReference<>();
            ClientCalls.unary(channel, CALL, CallOptions.DEFAULT, StringValue.of("x")).subscribe(outcome::set, t ->
            {
                outcome.set(t);
                ended.countDown();
            }, ended::countDown);

            assertThat(server.awaitTermination(20, TimeUnit.SECONDS)).as("the server terminated").isTrue();
            assertThat(closedTold.await(20, TimeUnit.SECONDS)).as("the listener heard of the end").isTrue();
            assertThat(ended.await(20, TimeUnit.SECONDS)).as("the client's call ended").isTrue();
            assertThat(outcome.get()).isInstanceOf(RpcException.class);
            assertThat(((RpcException)outcome.get()).status().code()).isEqualTo(StatusCode.UNAVAILABLE);
            assertThat(shutdownFailure.get()).isNull();
            // the client's end, closed before it was attached, is not taken for a ready connection
            assertThat(channel.state(false)).isNotEqualTo(ConnectivityState.READY);
        }
        finally
        {
            server.close();
        }
        // no server end of this connection is left listed (one closed before its handler had been put back)
        assertThat(InprocTransportProvider.killConnections(uri.substring("inproc://".length())))
            .as("inproc server ends left").isZero();
    }
}
