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
    /** The thread's current call, in a mutable slot: entering and leaving a handler costs one thread-local lookup. */
    static final class Slot
    {
        private ServerCall<?, ?> call;

        /**
         * @param next the call whose handler runs now on this thread (null when it returns).
         * @return the call that was current before (handlers may nest on one thread with the in-process transport).
         */
        ServerCall<?, ?> swap(final ServerCall<?, ?> next)
        {
            final ServerCall<?, ?> previous = call;
            call = next;
            return previous;
        }
    }

    private static final ThreadLocal<Slot> CURRENT = ThreadLocal.withInitial(Slot::new);
    /**
     * Whether any thread of this process ever ran a handler in a scope. A plain field: a thread that entered a scope
     * wrote it before, so it always sees its own write; a thread that never did has no current call whatever it
     * reads. A process that only makes calls (a pure client) then never looks up the thread-local.
     */
    private static boolean everEntered;

    private ServerCallScope()
    {
    }

    /**
     * @return this thread's slot; {@link Slot#swap} it to the call whose handler runs now, and back when it returns.
     */
    static Slot enter()
    {
        if (!everEntered)
        {
            everEntered = true; // once: no store to a shared line per call
        }
        return CURRENT.get();
    }

    /**
     * @return the context of the call whose handler runs on this thread now, or null.
     */
    public static RpcContext current()
    {
        if (!everEntered)
        {
            return null;
        }
        final ServerCall<?, ?> call = CURRENT.get().call;
        return call == null ? null : call.context();
    }

    /**
     * @param server a server.
     * @return true if this thread runs a handler of that server now (invoking it, or subscribing to its publisher).
     */
    static boolean inHandlerOf(final ServerRuntime server)
    {
        if (!everEntered)
        {
            return false;
        }
        final ServerCall<?, ?> call = CURRENT.get().call;
        return call != null && call.server == server;
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
