package io.reverb.rpc;

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
 */
public final class RpcContext
{
    /** Key under which the context is stored in the Reactor context. */
    public static final Class<RpcContext> CONTEXT_KEY = RpcContext.class;

    private final MethodDescriptor<?, ?> method;
    private final Metadata requestMetadata;
    private final Deadline deadline;
    private final String peer;
    // created on first use: most calls add none
    private Metadata responseHeaders;
    private Metadata responseTrailers;

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
        this.method = method;
        this.requestMetadata = requestMetadata;
        this.deadline = deadline;
        this.peer = peer;
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
        return requestMetadata;
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

    @Override
    public String toString()
    {
        return "RpcContext{" + method.fullMethodName() + ", peer=" + peer + "}";
    }
}
