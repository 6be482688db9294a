package io.reverb.rpc.observation;

import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.Status;

/** What the observation contexts of both sides tell of their call, for the keys both sides share. */
interface ObservedRpcCall
{
    /**
     * @return the method called.
     */
    MethodDescriptor<?, ?> method();

    /**
     * @return how the call ended, or null while it runs.
     */
    Status status();
}
