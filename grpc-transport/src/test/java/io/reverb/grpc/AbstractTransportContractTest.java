package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.ClientStreamTracer;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.internal.ClientStream;
import io.grpc.internal.GrpcUtil;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ManagedClientTransport;
import io.grpc.internal.ServerImplBuilder;
import io.grpc.internal.ServerTransport;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.reverb.grpc.ContractListeners.ClientRecording;
import io.reverb.grpc.ContractListeners.StreamCreation;
import io.reverb.grpc.ContractListeners.TestClientTransportListener;
import io.reverb.grpc.ContractListeners.TestServerListener;
import io.reverb.grpc.ContractListeners.TransportRecording;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static io.reverb.grpc.ContractListeners.STRINGS;
import static io.reverb.grpc.ContractListeners.WAIT_SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * grpc-java's transport API contracts, asserted on the transport itself (below grpc-java's channel and server, which
 * would hide a transport's breach behind their own serializing executors): a port, rewritten, of what applies of
 * grpc-java's {@code AbstractTransportTest} (core/src/testFixtures), plus the listener rules it relies on.
 *
 * <ul>
 *   <li>{@code ServerStreamListener} and {@code ClientStreamListener} callbacks of one stream run one at a time, in
 *   order (messages, then halfClosed, then closed; headers, then messages, then closed), and none after
 *   {@code closed}; {@code closed} comes exactly once, also when a cancel races a close.</li>
 *   <li>a client cancel closes the client listener with its status and the server listener with a status that is not
 *   OK; a server cancel (what grpc-java's server does at a deadline) closes the server listener with its status, not
 *   OK, so that grpc-java tells the handler {@code onCancel}; a server close that sent its status closes the server
 *   listener with OK; calls on a stream after it ended are no-ops; a transport's shutdownNow ends its streams on
 *   both sides, each listener closed once and not OK.</li>
 *   <li>a listener gets only the messages it requested; {@code onReady} follows the peer's reading after the stream
 *   reported not ready, and {@code isReady()} is true within it.</li>
 *   <li>the server stream's authority is the client stream's ({@code setAuthority}, as grpc-java's ClientCallImpl
 *   passes {@code CallOptions.withAuthority}), else the client transport's; the server's headers have the client
 *   transport's {@code user-agent} (grpc-java's, with the channel's user agent first), whatever the call's metadata
 *   said; a client transport reports no local address that is the remote one.</li>
 *   <li>a client stream's deadline ({@code setDeadline}, as grpc-java's ClientCallImpl passes it) reaches the
 *   server as {@code grpc-timeout}, and with grpc-java's ServerImpl on the transport the
 *   handler's {@code Context} has it, is cancelled at it and the handler gets {@code onCancel}, with no CANCEL from
 *   the client.</li>
 * </ul>
 *
 * <p>Run by {@link NettyTransportContractTest} (the reference) and by Reverb's {@code inproc}, {@code shm} and
 * {@code tcp} subclasses. Counts and latches only; the one deadline (1 s, generous for the call to reach its
 * handler) is waited for, never timed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
abstract class AbstractTransportContractTest
{
    static final String SERVICE = "contract.Test";
    static final MethodDescriptor<String, String> BIDI = MethodDescriptor.<String, String>newBuilder()
        .setType(MethodDescriptor.MethodType.BIDI_STREAMING).setFullMethodName(SERVICE + "/Bidi")
        .setRequestMarshaller(STRINGS).setResponseMarshaller(STRINGS).build();
    static final MethodDescriptor<String, String> UNARY = MethodDescriptor.<String, String>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName(SERVICE + "/Unary")
        .setRequestMarshaller(STRINGS).setResponseMarshaller(STRINGS).build();
    private static final Metadata.Key<String> ASCII = Metadata.Key.of("x-ascii", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<byte[]> BINARY = Metadata.Key.of("x-bin", Metadata.BINARY_BYTE_MARSHALLER);

    /** Every breach any listener of the test saw. */
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final TestServerListener serverListener = new TestServerListener(violations);
    private final List<ManagedClientTransport> clients = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private InternalServer server;
    private ManagedClientTransport client;

    /**
     * @param tracers  the server's stream tracer factories.
     * @param services the services it serves (a Reverb server routes only their methods; Netty ignores them).
     * @return a new, unstarted transport server at a fresh address.
     * @throws Exception on failure.
     */
    protected abstract InternalServer newServer(List<? extends ServerStreamTracer.Factory> tracers,
        List<ServerServiceDefinition> services) throws Exception;

    /**
     * @param server    a started server.
     * @param authority the channel's authority for the server (grpc-java's transport options).
     * @param userAgent the channel's user agent (grpc-java's transport options), or null.
     * @return an unstarted client transport to it.
     */
    protected abstract ManagedClientTransport newClientTransport(InternalServer server, String authority,
        String userAgent);

    /**
     * @param server a started server.
     * @return the authority a channel to it has by default ({@code host:port}, or the name of a named address).
     */
    protected abstract String authorityOf(InternalServer server);

    /**
     * Asserts that the transport holds no buffer or credit any more, once everything is shut down.
     *
     * @throws Exception if interrupted.
     */
    protected abstract void assertTransportResourcesReleased() throws Exception;

    /** The services a server of this suite serves: the two methods, with handlers only ServerImpl uses. */
    static List<ServerServiceDefinition> services(final ServerCalls.UnaryMethod<String, String> unary)
    {
        return Collections.singletonList(ServerServiceDefinition.builder(SERVICE)
            .addMethod(BIDI, ServerCalls.asyncBidiStreamingCall(responses -> null))
            .addMethod(UNARY, ServerCalls.asyncUnaryCall(unary))
            .build());
    }

    @BeforeEach
    void start() throws Exception
    {
        server = newServer(Collections.emptyList(), services((request, responses) -> { }));
        server.start(serverListener);
        client = startClient(server);
    }

    private ManagedClientTransport startClient(final InternalServer to) throws Exception
    {
        return startClient(to, authorityOf(to), null);
    }

    private ManagedClientTransport startClient(final InternalServer to, final String authority, final String userAgent)
        throws Exception
    {
        final ManagedClientTransport transport = newClientTransport(to, authority, userAgent);
        final TestClientTransportListener listener = new TestClientTransportListener();
        final Runnable starter = transport.start(listener);
        if (starter != null)
        {
            starter.run();
        }
        assertThat(listener.ready.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("client transport ready").isTrue();
        clients.add(transport);
        closeables.add(() ->
        {
            transport.shutdownNow(Status.UNAVAILABLE.withDescription("test over"));
            assertThat(listener.terminated.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("client terminated").isTrue();
        });
        return transport;
    }

    @AfterEach
    void stop() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        if (server == null)
        {
            return; // the set-up skipped (e.g. rdma:// without a device) before it made a server
        }
        for (final ServerTransport transport : serverListener.transports)
        {
            transport.shutdownNow(Status.UNAVAILABLE.withDescription("test over"));
        }
        server.shutdown();
        assertThat(serverListener.shutdown.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("server shut down").isTrue();
        for (final TransportRecording recording : serverListener.recordings)
        {
            assertThat(recording.terminated.await(WAIT_SECONDS, TimeUnit.SECONDS))
                .as("server transport %s terminated", recording.transport).isTrue();
            assertThat(recording.readyCount.get()).as("transportReady of %s", recording.transport).isOne();
        }
        assertThat(violations).as("breaches of grpc-java's listener rules").isEmpty();
        assertTransportResourcesReleased();
    }

    private ClientStream newStream(final ClientRecording listener)
    {
        return newStream(client, BIDI, new Metadata(), CallOptions.DEFAULT, null, listener);
    }

    private static ClientStream newStream(final ManagedClientTransport transport, final MethodDescriptor<?, ?> method,
        final Metadata headers, final CallOptions options, final Deadline deadline, final ClientRecording listener)
    {
        return newStream(transport, method, headers, options, deadline, null, listener);
    }

    private static ClientStream newStream(final ManagedClientTransport transport, final MethodDescriptor<?, ?> method,
        final Metadata headers, final CallOptions options, final Deadline deadline, final String authority,
        final ClientRecording listener)
    {
        final ClientStream stream = transport.newStream(method, headers, options,
            new ClientStreamTracer[] {new ClientStreamTracer()
            {
            }});
        if (deadline != null)
        {
            stream.setDeadline(deadline); // as grpc-java's ClientCallImpl does, before start
        }
        if (authority != null)
        {
            stream.setAuthority(authority); // as ClientCallImpl does for CallOptions.withAuthority, before start
        }
        stream.start(listener);
        return stream;
    }

    private ClientRecording clientListener()
    {
        return new ClientRecording(violations);
    }

    /** A whole stream on a new client transport, after which everything sent before has been processed. */
    private void roundTrip() throws Exception
    {
        final ManagedClientTransport other = startClient(server);
        final ClientRecording listener = clientListener();
        final ClientStream stream = newStream(other, BIDI, new Metadata(), CallOptions.DEFAULT, null, listener);
        stream.request(1);
        stream.writeMessage(STRINGS.stream("ping"));
        stream.flush();
        stream.halfClose();
        final StreamCreation created = serverListener.takeStream();
        created.stream.request(1);
        assertThat(created.listener.takeMessages(1)).containsExactly("ping");
        created.stream.writeHeaders(new Metadata(), true);
        created.stream.writeMessage(STRINGS.stream("pong"));
        created.stream.close(Status.OK, new Metadata());
        assertThat(listener.takeMessages(1)).containsExactly("pong");
        assertThat(listener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(created.listener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
    }

    // ------------------------------------------------------------------------------------------------ basic order

    @Test
    void streamDeliversEventsInOrderAndClosesEachListenerOnce() throws Exception
    {
        final Metadata headers = new Metadata();
        headers.put(ASCII, "hello");
        headers.put(BINARY, new byte[] {0, 1, (byte)0xFF});
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(client, BIDI, headers, CallOptions.DEFAULT, null, clientListener);
        stream.request(2);
        stream.writeMessage(STRINGS.stream("one"));
        stream.writeMessage(STRINGS.stream("two"));
        stream.flush();
        stream.halfClose();

        final StreamCreation created = serverListener.takeStream();
        assertThat(created.method).isEqualTo(BIDI.getFullMethodName());
        assertThat(created.headers.get(ASCII)).isEqualTo("hello");
        assertThat(created.headers.get(BINARY)).containsExactly(0, 1, 0xFF);
        created.stream.request(3);
        assertThat(created.listener.takeMessages(2)).containsExactly("one", "two");
        assertThat(created.listener.halfClosed.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("halfClosed").isTrue();

        final Metadata responseHeaders = new Metadata();
        responseHeaders.put(ASCII, "response headers");
        created.stream.writeHeaders(responseHeaders, true);
        created.stream.writeMessage(STRINGS.stream("three"));
        created.stream.writeMessage(STRINGS.stream("four"));
        final Metadata trailers = new Metadata();
        trailers.put(ASCII, "trailers");
        created.stream.close(Status.OK, trailers);

        assertThat(clientListener.headers.get(WAIT_SECONDS, TimeUnit.SECONDS).get(ASCII)).isEqualTo("response headers");
        assertThat(clientListener.takeMessages(2)).containsExactly("three", "four");
        assertThat(clientListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(clientListener.trailers.get(ASCII)).isEqualTo("trailers");
        assertThat(created.listener.awaitClose().getCode()).as("server listener: the status was sent")
            .isEqualTo(Status.Code.OK);

        assertThat(withoutOnReady(created.listener.eventsCopy()))
            .containsExactly("message", "message", "halfClosed", "closed");
        assertThat(withoutOnReady(clientListener.eventsCopy())).startsWith("headers").endsWith("closed")
            .containsOnlyOnce("headers", "closed");
        roundTrip(); // nothing more comes to either listener (the listeners would record it as a breach)
        assertThat(clientListener.closedCount.get()).isOne();
        assertThat(created.listener.closedCount.get()).isOne();
    }

    /**
     * A streaming call's response headers written with flush reach the client at once: before any message, and
     * whether or not the client asked for messages (grpc-java's server flushes them for streaming methods, and a
     * client may wait for them before it sends). Over Reverb they waited for the first response and its demand.
     */
    @Test
    void flushedHeadersReachTheClientBeforeAnyMessageAndWithoutDemand() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(client, BIDI, new Metadata(), CallOptions.DEFAULT, null, clientListener);
        final StreamCreation created = serverListener.takeStream();
        final Metadata responseHeaders = new Metadata();
        responseHeaders.put(ASCII, "session 42");
        created.stream.writeHeaders(responseHeaders, true);
        assertThat(clientListener.headers.get(WAIT_SECONDS, TimeUnit.SECONDS).get(ASCII)).isEqualTo("session 42");

        created.stream.close(Status.OK, new Metadata());
        stream.halfClose();
        assertThat(clientListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(withoutOnReady(clientListener.eventsCopy())).containsExactly("headers", "closed");
    }

    /**
     * @return the events without onReady, which may come at any point before closed; several messages delivered in
     * one messagesAvailable count once per message here.
     */
    private static List<String> withoutOnReady(final List<String> events)
    {
        final List<String> kept = new ArrayList<>();
        for (final String event : events)
        {
            if (!"onReady".equals(event))
            {
                kept.add(event);
            }
        }
        return kept;
    }

    @Test
    void zeroMessageStreamClosesBothSides() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(clientListener);
        stream.request(1);
        stream.halfClose();
        final StreamCreation created = serverListener.takeStream();
        created.stream.request(1);
        assertThat(created.listener.halfClosed.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        created.stream.writeHeaders(new Metadata(), true);
        created.stream.close(Status.OK, new Metadata());
        assertThat(clientListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(created.listener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(clientListener.messages).isEmpty();
        assertThat(created.listener.messages).isEmpty();
    }

    // ------------------------------------------------------------------------------------------------ cancel, close

    @Test
    void clientCancelClosesTheClientWithItsStatusAndTheServerNotOk() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(clientListener);
        final StreamCreation created = serverListener.takeStream();
        final Status status = Status.CANCELLED.withDescription("Nevermind");
        stream.cancel(status);
        final Status clientStatus = clientListener.awaitClose();
        assertThat(clientStatus.getCode()).isEqualTo(Status.Code.CANCELLED);
        assertThat(clientStatus.getDescription()).isEqualTo("Nevermind");
        assertThat(clientListener.trailers).as("trailers, even if none came").isNotNull();
        assertThat(created.listener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);

        stream.cancel(status); // no second closed on either side
        stream.writeMessage(STRINGS.stream("after cancel")); // no-ops after the end
        stream.halfClose();
        roundTrip();
        assertThat(clientListener.closedCount.get()).isOne();
        assertThat(created.listener.closedCount.get()).isOne();
    }

    @Test
    void serverCancelClosesTheServerListenerWithItsStatusNotOk() throws Exception
    {
        // what grpc-java's ServerImpl does when the call's deadline passes: the listener must hear that status (not
        // OK), or grpc-java reports onComplete to the handler instead of onCancel (issue 25)
        final ClientRecording clientListener = clientListener();
        newStream(clientListener);
        final StreamCreation created = serverListener.takeStream();
        final Status status = Status.DEADLINE_EXCEEDED.withDescription("It was bound to happen");
        created.stream.cancel(status);
        final Status serverStatus = created.listener.awaitClose();
        assertThat(serverStatus.getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(serverStatus.getDescription()).isEqualTo("It was bound to happen");
        assertThat(clientListener.awaitClose().getCode()).as("the client's call ended, not OK")
            .isNotEqualTo(Status.Code.OK);

        created.stream.cancel(status); // a second cancel: no second closed
        roundTrip();
        assertThat(clientListener.closedCount.get()).isOne();
        assertThat(created.listener.closedCount.get()).isOne();
    }

    @Test
    void earlyServerCloseEndsTheClientAndLaterCallsAreNoops() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(clientListener);
        stream.request(1);
        final StreamCreation created = serverListener.takeStream();
        created.stream.writeHeaders(new Metadata(), true);
        final Metadata trailers = new Metadata();
        trailers.put(ASCII, "why");
        created.stream.close(Status.NOT_FOUND.withDescription("Hello. Goodbye."), trailers);

        final Status clientStatus = clientListener.awaitClose();
        assertThat(clientStatus.getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(clientStatus.getDescription()).isEqualTo("Hello. Goodbye.");
        assertThat(clientListener.trailers.get(ASCII)).isEqualTo("why");
        assertThat(created.listener.awaitClose().getCode()).as("server listener: the status was sent")
            .isEqualTo(Status.Code.OK);

        created.stream.writeHeaders(new Metadata(), true); // no-ops on a closed server stream
        created.stream.writeMessage(STRINGS.stream("late"));
        created.stream.close(Status.INTERNAL, new Metadata());
        stream.writeMessage(STRINGS.stream("late request")); // and on the ended client stream
        stream.halfClose();
        roundTrip();
        assertThat(clientListener.messages).isEmpty();
        assertThat(clientListener.closedCount.get()).isOne();
        assertThat(created.listener.closedCount.get()).isOne();
    }

    @Test
    void closedExactlyOnceWhenCancelRacesClose() throws Exception
    {
        final int streams = 40;
        final List<ClientRecording> clientListeners = new ArrayList<>();
        final List<ClientStream> clientStreams = new ArrayList<>();
        final List<StreamCreation> created = new ArrayList<>();
        for (int i = 0; i < streams; i++)
        {
            final ClientRecording listener = clientListener();
            clientListeners.add(listener);
            final ClientStream stream = newStream(listener);
            stream.request(1);
            clientStreams.add(stream);
            created.add(serverListener.takeStream());
        }
        final ExecutorService racers = Executors.newFixedThreadPool(2);
        try
        {
            final CountDownLatch go = new CountDownLatch(1);
            final Future<?> cancels = racers.submit(() ->
            {
                go.await();
                clientStreams.forEach(s -> s.cancel(Status.CANCELLED.withDescription("racing")));
                return null;
            });
            final Future<?> closes = racers.submit(() ->
            {
                go.await();
                for (final StreamCreation c : created)
                {
                    c.stream.writeHeaders(new Metadata(), true);
                    c.stream.close(Status.OK, new Metadata());
                }
                return null;
            });
            go.countDown();
            cancels.get(WAIT_SECONDS, TimeUnit.SECONDS);
            closes.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
        finally
        {
            racers.shutdownNow();
        }
        for (int i = 0; i < streams; i++)
        {
            assertThat(clientListeners.get(i).awaitClose().getCode()).isIn(Status.Code.OK, Status.Code.CANCELLED);
            assertThat(created.get(i).listener.awaitClose()).isNotNull();
        }
        roundTrip();
        for (int i = 0; i < streams; i++)
        {
            assertThat(clientListeners.get(i).closedCount.get()).isOne();
            assertThat(created.get(i).listener.closedCount.get()).isOne();
        }
    }

    @Test
    void clientShutdownNowEndsItsStreamsOnBothSides() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        newStream(clientListener);
        final StreamCreation created = serverListener.takeStream();
        final Status status = Status.UNKNOWN.withDescription("test shutdownNow");
        client.shutdownNow(status);
        final Status clientStatus = clientListener.awaitClose();
        assertThat(clientStatus.getCode()).isEqualTo(Status.Code.UNKNOWN);
        assertThat(clientStatus.getDescription()).isEqualTo("test shutdownNow");
        assertThat(created.listener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
        roundTrip();
        assertThat(clientListener.closedCount.get()).isOne();
        assertThat(created.listener.closedCount.get()).isOne();
    }

    @Test
    void clientShutdownNowBeforeStartClosesTheStreamOnceStarted() throws Exception
    {
        // grpc-java's shutdownNow may come between newStream and start (ManagedChannel.shutdownNow during traffic)
        final ClientStream stream = client.newStream(BIDI, new Metadata(), CallOptions.DEFAULT,
            new ClientStreamTracer[] {new ClientStreamTracer()
            {
            }});
        client.shutdownNow(Status.UNAVAILABLE.withDescription("test shutdownNow before start"));
        final ClientRecording clientListener = clientListener();
        stream.start(clientListener);
        assertThat(clientListener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
        roundTrip();
        assertThat(clientListener.closedCount.get()).isOne();
    }

    @Test
    void aStreamCancelledBeforeStartDoesNotHoldTheTransportsTermination() throws Exception
    {
        // grpc-java may cancel a stream it made and will not start (a retry's substream, a call cancelled while its
        // stream was being made): the transport's termination (checked after each test) must not wait for it
        final ManagedClientTransport other = startClient(server);
        final ClientStream stream = other.newStream(BIDI, new Metadata(), CallOptions.DEFAULT,
            new ClientStreamTracer[] {new ClientStreamTracer()
            {
            }});
        stream.cancel(Status.CANCELLED.withDescription("cancelled before start"));
        roundTrip();
    }

    @Test
    void serverShutdownNowEndsItsStreamsOnBothSides() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        newStream(clientListener);
        final StreamCreation created = serverListener.takeStream();
        for (final ServerTransport transport : serverListener.transports)
        {
            transport.shutdownNow(Status.UNKNOWN.withDescription("test shutdownNow"));
        }
        assertThat(created.listener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
        assertThat(clientListener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
        assertThat(clientListener.closedCount.get()).isOne();
        assertThat(created.listener.closedCount.get()).isOne();
    }

    // ------------------------------------------------------------------------------------------------ who is calling

    @Test
    void serverStreamHasTheClientTransportsAuthority() throws Exception
    {
        newStream(clientListener());
        assertThat(serverListener.takeStream().stream.getAuthority()).isEqualTo(authorityOf(server));
    }

    @Test
    void serverStreamHasTheAuthorityTheClientStreamWasGiven() throws Exception
    {
        newStream(client, BIDI, new Metadata(), CallOptions.DEFAULT, null, "override.example:8443", clientListener());
        assertThat(serverListener.takeStream().stream.getAuthority()).isEqualTo("override.example:8443");
        // the server's own authority given to a stream of a transport whose authority is another
        final ManagedClientTransport named = startClient(server, "greeter.example:443", null);
        newStream(named, BIDI, new Metadata(), CallOptions.DEFAULT, null, authorityOf(server), clientListener());
        assertThat(serverListener.takeStream().stream.getAuthority()).isEqualTo(authorityOf(server));
    }

    @Test
    void serverStreamHasAHostNameAuthorityOfTheClientTransport() throws Exception
    {
        final ManagedClientTransport named = startClient(server, "greeter.example:443", null);
        newStream(named, BIDI, new Metadata(), CallOptions.DEFAULT, null, clientListener());
        assertThat(serverListener.takeStream().stream.getAuthority()).isEqualTo("greeter.example:443");
    }

    @Test
    void serverHeadersHaveTheClientTransportsUserAgentWhateverTheCallSaid() throws Exception
    {
        newStream(clientListener());
        assertThat(serverListener.takeStream().headers.get(GrpcUtil.USER_AGENT_KEY)).as("without a user agent")
            .startsWith("grpc-java-");
        final ManagedClientTransport billing = startClient(server, authorityOf(server), "billing/2.3");
        final Metadata headers = new Metadata();
        headers.put(GrpcUtil.USER_AGENT_KEY, "spoofed/1.0");
        newStream(billing, BIDI, headers, CallOptions.DEFAULT, null, clientListener());
        final Metadata received = serverListener.takeStream().headers;
        assertThat(received.getAll(GrpcUtil.USER_AGENT_KEY)).hasSize(1);
        assertThat(received.get(GrpcUtil.USER_AGENT_KEY)).startsWith("billing/2.3 grpc-java-");
    }

    @Test
    void clientTransportReportsNoLocalAddressThatIsTheRemoteOne() throws Exception
    {
        final ClientStream stream = newStream(clientListener());
        serverListener.takeStream();
        final Attributes attributes = stream.getAttributes();
        final SocketAddress remote = attributes.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
        assertThat(remote).isNotNull();
        assertThat(attributes.get(Grpc.TRANSPORT_ATTR_LOCAL_ADDR)).as("absent, or this end's").isNotEqualTo(remote);
    }

    // ------------------------------------------------------------------------------------------------ one per connection

    @Test
    void eachClientConnectionIsOneServerTransportTerminatedWithIt() throws Exception
    {
        final ClientRecording firstListener = clientListener();
        final ClientStream firstStream = newStream(firstListener);
        final StreamCreation first = serverListener.takeStream();
        final ManagedClientTransport second = startClient(server);
        final ClientRecording secondListener = clientListener();
        newStream(second, BIDI, new Metadata(), CallOptions.DEFAULT, null, secondListener);
        final StreamCreation secondCreated = serverListener.takeStream();

        assertThat(secondCreated.transport).as("a server transport per client connection").isNotSameAs(first.transport);
        assertThat(serverListener.transports).hasSize(2);
        assertThat(first.stream.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)).isNotNull();
        assertThat(first.stream.getAttributes().get(Grpc.TRANSPORT_ATTR_LOCAL_ADDR)).isNotNull();

        // the second client going away ends its server transport and that transport's stream, nothing else
        second.shutdownNow(Status.UNAVAILABLE.withDescription("second client gone"));
        assertThat(secondCreated.listener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
        assertThat(serverListener.recordingOf(secondCreated.transport).terminated.await(WAIT_SECONDS, TimeUnit.SECONDS))
            .as("the second client's server transport terminated").isTrue();
        assertThat(serverListener.recordingOf(first.transport).terminatedCount.get()).isZero();
        assertThat(first.listener.closedCount.get()).isZero();

        first.stream.writeHeaders(new Metadata(), true);
        first.stream.writeMessage(STRINGS.stream("still here"));
        first.stream.close(Status.OK, new Metadata());
        firstStream.request(1);
        assertThat(firstListener.takeMessages(1)).containsExactly("still here");
        assertThat(firstListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
    }

    @Test
    void serverTransportShutdownDrainsItsConnectionAlone() throws Exception
    {
        final ClientRecording firstListener = clientListener();
        final ClientStream firstStream = newStream(firstListener);
        final StreamCreation first = serverListener.takeStream();
        final ManagedClientTransport second = startClient(server);
        final ClientRecording secondListener = clientListener();
        newStream(second, BIDI, new Metadata(), CallOptions.DEFAULT, null, secondListener);
        final StreamCreation secondCreated = serverListener.takeStream();

        // graceful: the running stream goes on to its end, then the transport terminates
        first.transport.shutdown();
        firstStream.request(1);
        firstStream.writeMessage(STRINGS.stream("after shutdown"));
        firstStream.flush();
        firstStream.halfClose();
        first.stream.request(1);
        assertThat(first.listener.takeMessages(1)).containsExactly("after shutdown");
        first.stream.writeHeaders(new Metadata(), true);
        first.stream.writeMessage(STRINGS.stream("answered"));
        first.stream.close(Status.OK, new Metadata());
        assertThat(firstListener.takeMessages(1)).containsExactly("answered");
        assertThat(firstListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(first.listener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(serverListener.recordingOf(first.transport).terminated.await(WAIT_SECONDS, TimeUnit.SECONDS))
            .as("the drained transport terminated once its stream ended").isTrue();

        // the other connection is untouched
        assertThat(serverListener.recordingOf(secondCreated.transport).terminatedCount.get()).isZero();
        secondCreated.stream.writeHeaders(new Metadata(), true);
        secondCreated.stream.close(Status.OK, new Metadata());
        assertThat(secondListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
    }

    // ------------------------------------------------------------------------------------------------ flow control

    @Test
    void listenerGetsOnlyTheMessagesItRequested() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(clientListener);
        stream.writeMessage(STRINGS.stream("a"));
        stream.writeMessage(STRINGS.stream("b"));
        stream.writeMessage(STRINGS.stream("c"));
        stream.flush();
        stream.halfClose();
        final StreamCreation created = serverListener.takeStream();
        created.stream.request(1);
        assertThat(created.listener.takeMessages(1)).containsExactly("a");
        roundTrip(); // whatever the client sent has reached the server by now
        assertThat(created.listener.messages).as("nothing beyond the one requested").isEmpty();
        assertThat(created.listener.halfClosed.getCount()).as("halfClosed waits for the messages before it").isOne();
        created.stream.request(2);
        assertThat(created.listener.takeMessages(2)).containsExactly("b", "c");
        assertThat(created.listener.halfClosed.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        created.stream.close(Status.OK, new Metadata());
        assertThat(clientListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
        assertThat(created.listener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
    }

    @Test
    void serverOnReadyFollowsTheClientReadingAfterNotReady() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(clientListener); // requests nothing yet
        final StreamCreation created = serverListener.takeStream();
        created.stream.writeHeaders(new Metadata(), true);
        final int written = writeUntilNotReady(created);
        final AtomicBoolean readyInside = new AtomicBoolean();
        final CountDownLatch onReady = new CountDownLatch(1);
        created.listener.onReadyAction = () ->
        {
            if (created.stream.isReady())
            {
                readyInside.set(true);
                onReady.countDown();
            }
        };
        stream.request(written + 1);
        assertThat(clientListener.takeMessages(written)).hasSize(written);
        assertThat(onReady.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("onReady with isReady() true").isTrue();
        assertThat(readyInside).isTrue();
        created.stream.close(Status.OK, new Metadata());
        assertThat(clientListener.awaitClose().getCode()).isEqualTo(Status.Code.OK);
    }

    /**
     * Writes 1 KiB messages while the server stream is ready (at most 16 Ki of them).
     *
     * @return how many it wrote; the stream then reports not ready.
     */
    private static int writeUntilNotReady(final StreamCreation created)
    {
        final String kib = "x".repeat(1024);
        int written = 0;
        while (created.stream.isReady() && written < 16 * 1024)
        {
            created.stream.writeMessage(STRINGS.stream(kib));
            created.stream.flush();
            written++;
        }
        assertThat(created.stream.isReady()).as("not ready after %d messages nobody read", written).isFalse();
        return written;
    }

    @Test
    void clientOnReadyFollowsTheServerReadingAfterNotReady() throws Exception
    {
        final ClientRecording clientListener = clientListener();
        final ClientStream stream = newStream(clientListener);
        final StreamCreation created = serverListener.takeStream(); // requests nothing yet
        final String kib = "x".repeat(1024);
        int written = 0;
        while (stream.isReady() && written < 16 * 1024)
        {
            stream.writeMessage(STRINGS.stream(kib));
            stream.flush();
            written++;
        }
        // a client stream may report not ready before its call is even sent (Reverb: before the server's demand)
        assertThat(stream.isReady()).as("not ready after %d messages nobody read", written).isFalse();
        final AtomicBoolean readyInside = new AtomicBoolean();
        final CountDownLatch onReady = new CountDownLatch(1);
        clientListener.onReadyAction = () ->
        {
            if (stream.isReady())
            {
                readyInside.set(true);
                onReady.countDown();
            }
        };
        created.stream.request(written + 1);
        assertThat(created.listener.takeMessages(written)).hasSize(written);
        assertThat(onReady.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("onReady with isReady() true").isTrue();
        assertThat(readyInside).isTrue();
        stream.cancel(Status.CANCELLED.withDescription("done"));
        assertThat(created.listener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
    }

    // ------------------------------------------------------------------------------------------------ deadlines

    @Test
    void streamDeadlineReachesTheServerAsGrpcTimeout() throws Exception
    {
        // grpc-java's ClientCallImpl gives the transport the call's effective deadline (the options' or the
        // Context's, the sooner) with setDeadline; the options passed to newStream need not carry it (over Netty a
        // deadline only in the options does not travel)
        final ClientStream viaSetDeadline = newStream(client, BIDI, new Metadata(), CallOptions.DEFAULT,
            Deadline.after(20, TimeUnit.SECONDS), clientListener());
        final StreamCreation first = serverListener.takeStream();
        assertThat(first.headers.get(GrpcUtil.TIMEOUT_KEY)).as("grpc-timeout of a stream given setDeadline")
            .isNotNull().isPositive().isLessThanOrEqualTo(TimeUnit.SECONDS.toNanos(20));

        viaSetDeadline.cancel(Status.CANCELLED);
        assertThat(first.listener.awaitClose().getCode()).isNotEqualTo(Status.Code.OK);
    }

    /**
     * A deadline that must not expire before the call reaches its handler, on this host: a subclass that may run on a
     * slow one (a real device in a VM under software emulation) lengthens it.
     *
     * @param millis the deadline on a build machine.
     * @return the deadline here (by default, the same).
     */
    protected long scaledMillis(final long millis)
    {
        return millis;
    }

    @Test
    void serverDeadlineCancelsTheHandlersContextAndCallsOnCancelWithoutAClientCancel() throws Exception
    {
        // grpc-java's ServerImpl over the transport; the client is the bare transport stream, which has no deadline
        // timer of its own (grpc-java's ClientCallImpl has it): no CANCEL ever comes, only the server's deadline
        final AtomicReference<Deadline> handlerDeadline = new AtomicReference<>();
        final CompletableFuture<Throwable> contextCancelled = new CompletableFuture<>();
        final CountDownLatch onCancel = new CountDownLatch(1);
        final AtomicBoolean onComplete = new AtomicBoolean();
        final AtomicReference<InternalServer> transportServer = new AtomicReference<>();
        final List<ServerServiceDefinition> services = services((request, responses) ->
        {
            final ServerCallStreamObserver<String> call = (ServerCallStreamObserver<String>)responses;
            call.setOnCancelHandler(onCancel::countDown);
            call.setOnCloseHandler(() -> onComplete.set(true));
            final Context context = Context.current();
            handlerDeadline.set(context.getDeadline());
            context.addListener(c -> contextCancelled.complete(c.cancellationCause()), Runnable::run);
            // and never answers
        });
        final Server grpcServer = new ServerImplBuilder((tracers, metrics) ->
        {
            try
            {
                transportServer.set(newServer(tracers, services));
            }
            catch (final Exception e)
            {
                throw new IllegalStateException(e);
            }
            return transportServer.get();
        }).addService(services.get(0)).build().start();
        closeables.add(() ->
        {
            grpcServer.shutdownNow();
            assertThat(grpcServer.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        });
        final ManagedClientTransport other = startClient(transportServer.get());
        final ClientRecording listener = clientListener();
        final ClientStream stream = newStream(other, UNARY, new Metadata(), CallOptions.DEFAULT,
            Deadline.after(scaledMillis(1000), TimeUnit.MILLISECONDS), listener);
        stream.request(1);
        stream.writeMessage(STRINGS.stream("wait for me"));
        stream.flush();
        stream.halfClose();

        assertThat(listener.awaitClose().getCode()).as("the client's stream ended, not OK").isNotEqualTo(Status.Code.OK);
        assertThat(contextCancelled.get(WAIT_SECONDS, TimeUnit.SECONDS)).as("the handler's Context was cancelled")
            .isNotNull();
        assertThat(onCancel.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("the handler got onCancel").isTrue();
        assertThat(onComplete).as("the handler was not told the call completed").isFalse();
        assertThat(handlerDeadline.get()).as("the handler's Context had the deadline").isNotNull();
    }
}
