package io.reverb.rdma.engine;

/**
 * The lock of one connection's send side: one object, created and owned by its {@link ConnectionSender} and handed
 * by constructor to the few classes that share the state it guards. Producers (claim, commit, abort) and the poller
 * (completions, credits, CTS/REFUSE, close) take it; it is a plain monitor ({@code synchronized (lock)}), the fastest
 * uncontended lock on the per-message path, where it is entered once per claim and once per commit.
 *
 * <h2>What it guards</h2>
 * <ul>
 *   <li>{@link ConnectionSender}: the {@link SendRing}, the {@link CreditWindow}, the {@link ControlQueue}, the
 *       {@link OutboundRendezvous}, batch sequence and ends, signaled work requests in flight, stalls, message ids,
 *       outstanding claims, writable waiters and epochs, the CLOSE batch;</li>
 *   <li>{@link RendezvousSender}: the announced direct write, its back-off, refusals and refused commits, open
 *       mappings;</li>
 *   <li>{@link EngineConnection}: its state transitions (written under this lock, read anywhere: the field is
 *       volatile) and whether CLOSE was sent, and the decision to release its registered memory;</li>
 *   <li>{@link CloseCallbacks}: the callbacks, whether they ran, the recorded cause.</li>
 * </ul>
 * A method that requires the lock says so in its javadoc and checks it with
 * {@code assert lock.isHeldByCurrentThread()} (tests run with assertions on; production pays nothing).
 *
 * <h2>Lock order</h2>
 * The one place it is written down. Taken only in this order, never the other way:
 * <ol>
 *   <li>rpc-core's write lock of the connection ({@code WireConnection}): a frame is claimed, written and committed
 *       under it;</li>
 *   <li>this send lock;</li>
 *   <li>the send pool's monitor ({@link BufferPool}), then the engine-wide {@link RendezvousBudget};</li>
 *   <li>the provider's QP: {@code QueuePair.postSend} takes its own locks (shm: the QP's send lock, then the write
 *       lock of its doorbell socket; tcp: the QP's send lock, released before its wire lock is tried, never waited
 *       for).</li>
 * </ol>
 * Nothing runs user or RPC code while holding this lock: writable callbacks, close callbacks and failed-send reports
 * run after it is released, and providers report through completion queues, which the poller drains without it.
 */
final class SendLock
{
    /** @return true if the calling thread holds this lock (for assertions) */
    boolean isHeldByCurrentThread()
    {
        return Thread.holdsLock(this);
    }

    @Override
    public String toString()
    {
        return "SendLock{held=" + isHeldByCurrentThread() + '}';
    }
}
