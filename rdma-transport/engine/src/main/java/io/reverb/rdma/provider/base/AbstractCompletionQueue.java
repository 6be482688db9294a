package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.VerbsContext;

/**
 * What every provider's completion queue holds the same way: its context, its capacity in entries and the
 * channel it raises events on (null if none). How completions are stored, polled and armed stays in the
 * provider. One level of inheritance only.
 *
 * @param <X> the provider's context type
 * @param <H> the provider's completion channel type
 */
public abstract class AbstractCompletionQueue<X extends VerbsContext, H extends CompletionChannel> implements CompletionQueue
{
    protected final X context;
    protected final int capacity;
    protected final H channel;

    /**
     * @param context  the context that created the CQ.
     * @param capacity entries, as the provider sized them.
     * @param channel  where events are raised, or null.
     */
    protected AbstractCompletionQueue(final X context, final int capacity, final H channel)
    {
        this.context = context;
        this.capacity = capacity;
        this.channel = channel;
    }

    @Override
    public final int capacity()
    {
        return capacity;
    }

    @Override
    public final CompletionChannel channel()
    {
        return channel;
    }
}
