package io.reverb.rpc.internal;

import io.reverb.rpc.RpcContext;

/**
 * Which server call the current thread is running the handler of, so that a client call made there (and maybe
 * subscribed on its own, outside the handler's publisher) can find the {@link RpcContext} it inherits its deadline
 * and cancellation from, as grpc-java's {@code Context.current()}. Set by the runtime only while it invokes a
 * handler and subscribes to its publisher; the Reactor context, when it has an {@link RpcContext}, takes precedence.
 */
public final class ServerCallScope
{
    private static final ThreadLocal<ServerCall<?, ?>> CURRENT = new ThreadLocal<>();

    private ServerCallScope()
    {
    }

    /**
     * @param call the call whose handler runs now on this thread.
     * @return the call that was current before (handlers may nest on one thread with the in-process transport).
     */
    static ServerCall<?, ?> enter(final ServerCall<?, ?> call)
    {
        final ServerCall<?, ?> previous = CURRENT.get();
        CURRENT.set(call);
        return previous;
    }

    /**
     * @param previous what {@link #enter} returned.
     */
    static void exit(final ServerCall<?, ?> previous)
    {
        CURRENT.set(previous);
    }

    /**
     * @return the context of the call whose handler runs on this thread now, or null.
     */
    public static RpcContext current()
    {
        final ServerCall<?, ?> call = CURRENT.get();
        return call == null ? null : call.context();
    }

    /**
     * The context a client call made now inherits from.
     *
     * @param detached  the call opted out ({@code CallOptions.withoutContextPropagation()}).
     * @param fromReactor the {@link RpcContext} of the subscriber's Reactor context, or null.
     * @param assembled   the context current when the call was made ({@link #current()} then), or null.
     * @return the parent, or null for none.
     */
    public static RpcContext parent(final boolean detached, final RpcContext fromReactor, final RpcContext assembled)
    {
        if (detached)
        {
            return null;
        }
        return fromReactor != null ? fromReactor : assembled;
    }
}
