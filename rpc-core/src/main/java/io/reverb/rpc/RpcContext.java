package io.reverb.rpc;

import io.reverb.common.LogLimiter;
import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.reactivestreams.Subscriber;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * Server side view of the call being handled: its method, the client's metadata, its deadline and peer, and the
 * response headers and trailers the handler or an interceptor may add to.
 *
 * <p>Reachable from handlers through the Reactor context: {@code RpcContext.current().flatMap(ctx -> ...)}.
 * Response headers are sent with the first response message (or with the status if there is none), so add to
 * them before emitting; trailers are sent with the status, so they can be added until the handler's publisher
 * terminates.
 *
 * <p>Cancellation, as grpc-java's {@code Context}: when the call ends early (the client cancelled, its deadline
 * passed, the connection was lost) the runtime {@link #cancel(Status) cancels} this context, and every client call
 * made while handling it is cancelled too, even one not composed into the handler's publisher (subscribed on its
 * own, fire-and-forget): such calls find the context in the Reactor context, or, when made on the handler's thread
 * while the runtime runs the handler, in a thread-local. A call opts out with
 * {@link CallOptions#withoutContextPropagation()}. A call that ends normally does not cancel its context, so
 * background calls may outlive a successful answer.
 */
public final class RpcContext
{
    private static final Logger LOG = LoggerFactory.getLogger(RpcContext.class);
    /** A listener failing on every call logs a burst, then a line per interval with the count left out. */
    private static final LogLimiter LISTENER_FAILURES = new LogLimiter((line, t) -> LOG.warn(line, t));

    /** Key under which the context is stored in the Reactor context. */
    public static final Class<RpcContext> CONTEXT_KEY = RpcContext.class;

    private final MethodDescriptor<?, ?> method;
    /** The client's metadata; null until asked for when it sent none (the runtime passes none then). */
    private volatile Metadata requestMetadata;
    private final Deadline deadline;
    private final String peer;
    private final AcceptedConnection connection;
    // created on first use: most calls add none
    private Metadata responseHeaders;
    private Metadata responseTrailers;
    private volatile Status cancellation;
    private volatile String responseCompression;
    private volatile Codec responseCompressor;
    // guarded by this; created on first use
    private List<Runnable> cancellationListeners;

    /**
     * Created by the runtime for each call.
     *
     * @param method          the method called.
     * @param requestMetadata the client's initial metadata.
     * @param deadline        the call's deadline, or null.
     * @param peer            a description of the client's address.
     */
    public RpcContext(
        final MethodDescriptor<?, ?> method, final Metadata requestMetadata, final Deadline deadline, final String peer)
    {
        this(method, requestMetadata, deadline, peer, null);
    }

    /**
     * Created by the runtime for each call, with the connection the call came on.
     *
     * @param method          the method called.
     * @param requestMetadata the client's initial metadata, or null if it sent none.
     * @param deadline        the call's deadline, or null.
     * @param peer            a description of the client's address.
     * @param connection      the server connection the call came on, or null if there is none.
     */
    public RpcContext(final MethodDescriptor<?, ?> method, final Metadata requestMetadata, final Deadline deadline,
        final String peer, final AcceptedConnection connection)
    {
        this.method = method;
        this.requestMetadata = requestMetadata;
        this.deadline = deadline;
        this.peer = peer;
        this.connection = connection;
    }

    /**
     * @return the current call's context, empty outside a call.
     */
    public static Mono<RpcContext> current()
    {
        return Mono.deferContextual(ctx -> Mono.justOrEmpty(ctx.getOrEmpty(CONTEXT_KEY)));
    }

    /**
     * @param context a Reactor context view.
     * @return the call's context in it, or null.
     */
    public static RpcContext from(final ContextView context)
    {
        return context.getOrDefault(CONTEXT_KEY, null);
    }

    /**
     * The context of the call whose responses a subscriber takes: for the subscriber the runtime subscribes to a
     * handler's response publisher, read from it directly (no Reactor context is built for it); for another
     * {@link CoreSubscriber}, from its Reactor context.
     *
     * @param subscriber a subscriber to a handler's response publisher.
     * @return the call's context, or null if it has none.
     */
    public static RpcContext of(final Subscriber<?> subscriber)
    {
        if (subscriber instanceof Carrier)
        {
            return ((Carrier)subscriber).rpcContext();
        }
        return subscriber instanceof CoreSubscriber ? from(((CoreSubscriber<?>)subscriber).currentContext()) : null;
    }

    /**
     * What carries a call's context without a Reactor context: the runtime's subscriber to a handler's responses.
     */
    public interface Carrier
    {
        /**
         * @return the context of the call (the runtime may make it only now: ask for it only when you need it).
         */
        RpcContext rpcContext();

        /**
         * What {@code rpcContext().connection()} gives, read without making the context when the runtime made none
         * yet (a bridge that needs only this, the deadline and the metadata costs no context per call).
         *
         * @return the server connection the call came on, or null.
         */
        default AcceptedConnection connection()
        {
            return rpcContext().connection();
        }

        /**
         * What {@code rpcContext().deadline()} gives, read without making the context.
         *
         * @return the call's deadline, or null for none.
         */
        default Deadline deadline()
        {
            return rpcContext().deadline();
        }

        /**
         * The client's metadata if it has entries, read without making the context (nor an empty metadata).
         *
         * @return the client's metadata, or null if it sent none (or an empty one).
         */
        default Metadata requestMetadataIfAny()
        {
            final RpcContext context = rpcContext();
            return context.hasMetadata() ? context.metadata() : null;
        }

        /**
         * As {@code rpcContext().responseCompression(codecName)}, without making the context when that would change
         * nothing (e.g. "identity" on a server that compresses nothing by default).
         *
         * @param codecName "gzip", another registered codec's name, or "identity" for none.
         */
        default void responseCompression(final String codecName)
        {
            rpcContext().responseCompression(codecName);
        }
    }

    /**
     * @return the method.
     */
    public MethodDescriptor<?, ?> method()
    {
        return method;
    }

    /**
     * @return the client's initial metadata.
     */
    public Metadata metadata()
    {
        Metadata metadata = requestMetadata;
        if (metadata == null)
        {
            synchronized (this)
            {
                metadata = requestMetadata;
                if (metadata == null)
                {
                    // the client sent none: an empty one for the first who asks (most handlers never do)
                    requestMetadata = metadata = new Metadata();
                }
            }
        }
        return metadata;
    }

    /**
     * @return whether the client's metadata has entries ({@link #metadata()} then makes no empty one to say it has
     *         none).
     */
    public boolean hasMetadata()
    {
        final Metadata metadata = requestMetadata;
        return metadata != null && !metadata.isEmpty();
    }

    /**
     * @return the deadline, or null for none.
     */
    public Deadline deadline()
    {
        return deadline;
    }

    /**
     * @return the client's address as the transport describes it.
     */
    public String peer()
    {
        return peer;
    }

    /**
     * @return the server connection this call came on (what its {@link AcceptedConnection.Listener} was told of, with
     * its {@link AcceptedConnection#attachment()}), or null for a context the runtime did not create.
     */
    public AcceptedConnection connection()
    {
        return connection;
    }

    /**
     * Compresses this call's response messages (from the next one on) with the codec of that name in the server's
     * registry, as grpc-java's {@code ServerCall.setCompression}; overrides the server's default. gzip is always
     * used; another codec only when the client lists it in its {@code grpc-accept-encoding} metadata, and never when
     * the server's registry lacks it (the responses then go uncompressed). Messages below the server's
     * {@code minCompressionSize} go uncompressed.
     *
     * @param codecName "gzip", another registered codec's name, or "identity" for none.
     */
    public void responseCompression(final String codecName)
    {
        this.responseCompressor = null;
        this.responseCompression = CodecRegistry.checkName(codecName);
    }

    /**
     * Like {@link #responseCompression(String)}, with a codec object that need not be in the server's registry.
     *
     * @param codec the codec.
     */
    public void responseCompression(final Codec codec)
    {
        this.responseCompression = CodecRegistry.checkName(Objects.requireNonNull(codec, "codec").name());
        this.responseCompressor = codec;
    }

    /**
     * @return the codec name set by {@link #responseCompression(String)}, or null (the server's default applies).
     */
    public String responseCompression()
    {
        return responseCompression;
    }

    /**
     * @return the codec set by {@link #responseCompression(Codec)}, or null.
     */
    public Codec responseCompressor()
    {
        return responseCompressor;
    }

    /**
     * @return mutable response headers, sent before the first response message.
     */
    public Metadata responseHeaders()
    {
        if (responseHeaders == null)
        {
            responseHeaders = new Metadata();
        }
        return responseHeaders;
    }

    /**
     * @return true if response headers were added (lets the runtime skip them without creating them).
     */
    public boolean hasResponseHeaders()
    {
        return responseHeaders != null && !responseHeaders.isEmpty();
    }

    /**
     * @return true if trailers were added.
     */
    public boolean hasResponseTrailers()
    {
        return responseTrailers != null && !responseTrailers.isEmpty();
    }

    /**
     * @return mutable trailers, sent with the status.
     */
    public Metadata responseTrailers()
    {
        if (responseTrailers == null)
        {
            responseTrailers = new Metadata();
        }
        return responseTrailers;
    }

    /**
     * @return true once the call ended early (see {@link #cancel(Status)}).
     */
    public boolean isCancelled()
    {
        return cancellation != null;
    }

    /**
     * @return why the call ended early (CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE...), or null while it has not.
     */
    public Status cancellationStatus()
    {
        return cancellation;
    }

    /**
     * Runs the listener when the call ends early, at once if it already has. Client calls made while handling this
     * call register here to be cancelled with it.
     *
     * @param listener runs once, on the thread that cancels (keep it short, do not block).
     * @return disposes the registration (call it when the listener is no longer needed).
     */
    public Disposable onCancel(final Runnable listener)
    {
        Objects.requireNonNull(listener, "listener");
        synchronized (this)
        {
            if (cancellation == null)
            {
                if (cancellationListeners == null)
                {
                    cancellationListeners = new ArrayList<>(2);
                }
                cancellationListeners.add(listener);
                return () -> removeListener(listener);
            }
        }
        listener.run();
        return Disposables.disposed();
    }

    private synchronized void removeListener(final Runnable listener)
    {
        if (cancellationListeners != null)
        {
            cancellationListeners.remove(listener);
        }
    }

    /**
     * Cancels this context: the runtime calls it when the handled call ends early. Listeners run once, here; later
     * calls do nothing.
     *
     * @param reason why, not OK.
     * @return true if this call cancelled the context, false if it was already cancelled.
     */
    public boolean cancel(final Status reason)
    {
        Objects.requireNonNull(reason, "reason");
        final List<Runnable> run;
        synchronized (this)
        {
            if (cancellation != null)
            {
                return false;
            }
            cancellation = reason;
            run = cancellationListeners;
            cancellationListeners = null;
        }
        if (run != null)
        {
            for (final Runnable listener : run)
            {
                try
                {
                    listener.run();
                }
                catch (final RuntimeException e)
                {
                    LISTENER_FAILURES.log("cancellation listener", "a cancellation listener of " + this + " threw", e);
                }
            }
        }
        return true;
    }

    @Override
    public String toString()
    {
        return "RpcContext{" + method.fullMethodName() + ", peer=" + peer + "}";
    }
}
