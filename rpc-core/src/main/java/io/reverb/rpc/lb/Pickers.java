package io.reverb.rpc.lb;

import io.reverb.rpc.Status;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The built-in pickers. Each is an immutable snapshot over an array of ready subchannels; none allocates per pick.
 */
public final class Pickers
{
    private Pickers()
    {
    }

    /**
     * @param status why nothing can be picked (UNAVAILABLE while connecting or after failures).
     * @return a picker that picks nothing.
     */
    public static Picker none(final Status status)
    {
        return new NonePicker(status);
    }

    /**
     * @param subchannel the subchannel.
     * @return a picker that always picks it.
     */
    public static Picker fixed(final Subchannel subchannel)
    {
        return new FixedPicker(subchannel);
    }

    /**
     * @param ready the ready subchannels, not empty (the array is not copied: do not change it).
     * @param start index of the first pick (randomised by the balancer so that channels do not all start at 0).
     * @return a picker that takes them in turn.
     */
    public static Picker roundRobin(final Subchannel[] ready, final int start)
    {
        return new RoundRobinPicker(ready, start);
    }

    /**
     * @param ready the ready subchannels, not empty (not copied).
     * @return a picker that takes the ready subchannel of lowest {@link SubchannelLoad#cost(long)}: of all of them
     * when there are at most four, else of two drawn at random (power of two choices).
     */
    public static Picker peakEwma(final Subchannel[] ready)
    {
        return new PeakEwmaPicker(ready);
    }

    private static final class NonePicker implements Picker
    {
        private final Status status;

        NonePicker(final Status status)
        {
            this.status = Objects.requireNonNull(status, "status");
        }

        @Override
        public Subchannel pick()
        {
            return null;
        }

        @Override
        public Status noneReadyStatus()
        {
            return status;
        }

        @Override
        public String toString()
        {
            return "NonePicker{" + status + "}";
        }
    }

    private static final class FixedPicker implements Picker
    {
        private final Subchannel subchannel;

        FixedPicker(final Subchannel subchannel)
        {
            this.subchannel = Objects.requireNonNull(subchannel, "subchannel");
        }

        @Override
        public Subchannel pick()
        {
            return subchannel;
        }

        @Override
        public Status noneReadyStatus()
        {
            return Status.UNAVAILABLE;
        }

        @Override
        public String toString()
        {
            return "FixedPicker{" + subchannel.address() + "}";
        }
    }

    private static final class RoundRobinPicker implements Picker
    {
        private final Subchannel[] ready;
        private final AtomicInteger next;

        RoundRobinPicker(final Subchannel[] ready, final int start)
        {
            if (ready.length == 0)
            {
                throw new IllegalArgumentException("no ready subchannel");
            }
            this.ready = ready;
            this.next = new AtomicInteger(Math.floorMod(start, ready.length));
        }

        @Override
        public Subchannel pick()
        {
            // floorMod keeps the index right when the counter wraps past Integer.MAX_VALUE
            return ready[Math.floorMod(next.getAndIncrement(), ready.length)];
        }

        @Override
        public Status noneReadyStatus()
        {
            return Status.UNAVAILABLE;
        }

        @Override
        public String toString()
        {
            return "RoundRobinPicker{" + ready.length + " ready}";
        }
    }

    private static final class PeakEwmaPicker implements Picker
    {
        /** Up to this many ready replicas, every pick compares them all; beyond, two drawn at random. */
        static final int FULL_SCAN_MAX = 4;

        private final Subchannel[] ready;

        PeakEwmaPicker(final Subchannel[] ready)
        {
            if (ready.length == 0)
            {
                throw new IllegalArgumentException("no ready subchannel");
            }
            this.ready = ready;
        }

        @Override
        public Subchannel pick()
        {
            final int n = ready.length;
            if (n == 1)
            {
                return ready[0];
            }
            if (n <= FULL_SCAN_MAX)
            {
                return cheapest();
            }
            final ThreadLocalRandom random = ThreadLocalRandom.current();
            final int i = random.nextInt(n);
            // a second index, different from the first
            final int j = (i + 1 + random.nextInt(n - 1)) % n;
            final Subchannel a = ready[i];
            final Subchannel b = ready[j];
            final long now = a.load().clock().getAsLong();
            final double costA = a.load().cost(now);
            final double costB = b.load().cost(now);
            if (costA == costB)
            {
                return a.load().outstanding() <= b.load().outstanding() ? a : b;
            }
            return costA < costB ? a : b;
        }

        /**
         * The cheapest of all, ties broken at random. With two choices, a pair holding the slow replica and a fast
         * one that just stalled (its average peaked) picks the slow one; with few replicas, scanning them all finds
         * the other fast one instead, for a handful of reads.
         */
        private Subchannel cheapest()
        {
            final long now = ready[0].load().clock().getAsLong();
            Subchannel best = null;
            double bestCost = 0;
            int bestOutstanding = 0;
            int ties = 0;
            for (final Subchannel candidate : ready)
            {
                final SubchannelLoad load = candidate.load();
                final double cost = load.cost(now);
                final int outstanding = load.outstanding();
                if (best == null || cost < bestCost || cost == bestCost && outstanding < bestOutstanding)
                {
                    best = candidate;
                    bestCost = cost;
                    bestOutstanding = outstanding;
                    ties = 1;
                }
                else if (cost == bestCost && outstanding == bestOutstanding &&
                    ThreadLocalRandom.current().nextInt(++ties) == 0)
                {
                    best = candidate; // each of k equal candidates kept with probability 1/k
                }
            }
            return best;
        }

        @Override
        public Status noneReadyStatus()
        {
            return Status.UNAVAILABLE;
        }

        @Override
        public String toString()
        {
            return "PeakEwmaPicker{" + ready.length + " ready}";
        }
    }

    /**
     * The status a balancer fails calls with while a subchannel cannot be reached: its last failure (which says why,
     * and keeps UNAUTHENTICATED for refused credentials), or a plain UNAVAILABLE naming the address.
     *
     * @param subchannel the subchannel that failed.
     * @return the status.
     */
    static Status unreachable(final Subchannel subchannel)
    {
        final Status failure = subchannel.lastFailure();
        return failure != null ? failure :
            Status.UNAVAILABLE.withDescription("connection to " + subchannel.address() + " failed");
    }
}
