package io.reverb.rpc.internal;

import java.util.ArrayList;
import java.util.List;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/** A subscriber that records what it is given, for call-path tests that drive calls by hand. */
class Recorder<T> implements CoreSubscriber<T>
{
    final List<T> values = new ArrayList<>();
    boolean completed;
    Throwable error;

    @Override
    public void onSubscribe(final Subscription s)
    {
    }

    @Override
    public void onNext(final T value)
    {
        values.add(value);
    }

    @Override
    public void onError(final Throwable t)
    {
        error = t;
    }

    @Override
    public void onComplete()
    {
        completed = true;
    }
}
