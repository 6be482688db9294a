package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.SVCPostRecv;
import io.reverb.rdma.verbs.RecvRequest;
import java.io.IOException;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The prepared {@code SVCPostRecv} calls of one queue pair. A DiSNi {@code SVCPostRecv} cannot be
 * modified at all (not even {@code wr_id}), so calls are kept by {@code wr_id} together with the SGEs
 * they were built for: re-posting the same receive slot (same id and SGEs, the engine's pattern) reuses
 * the call; anything else rebuilds that entry. At most {@code limit} calls are kept; when full, all are
 * freed and the cache starts again. Not thread-safe: the queue pair serialises receives.
 */
final class PostRecvCache
{
    /** Builds a stateful call for a work request (DiSNi: {@code qp.postRecv(List.of(wr), null)}). */
    @FunctionalInterface
    interface Factory
    {
        /**
         * @param template the work request, as {@link WorkRequestTranslator#newRecvWr} builds it.
         * @return a prepared call.
         * @throws IOException if DiSNi refuses.
         */
        SVCPostRecv prepare(IbvRecvWR template) throws IOException;
    }

    private final Factory factory;
    private final int limit;
    private final Long2ObjectHashMap<Prepared> calls = new Long2ObjectHashMap<>();
    private int built;

    PostRecvCache(final Factory factory, final int limit)
    {
        this.factory = factory;
        this.limit = limit;
    }

    /**
     * @param request SPI request.
     * @return the call for exactly this request, ready to {@code execute()}.
     * @throws IOException if a new call cannot be built.
     */
    SVCPostRecv prepare(final RecvRequest request) throws IOException
    {
        Prepared prepared = calls.get(request.wrId());
        if (prepared != null && prepared.matches(request))
        {
            return prepared.call;
        }
        if (prepared != null)
        {
            prepared.call.free();
            calls.remove(request.wrId());
        }
        else if (calls.size() >= limit)
        {
            freeAll();
        }
        prepared = new Prepared(factory.prepare(WorkRequestTranslator.newRecvWr(request)), request);
        built++;
        calls.put(request.wrId(), prepared);
        return prepared.call;
    }

    /** @return calls built so far. */
    int built()
    {
        return built;
    }

    /** @return calls currently held. */
    int size()
    {
        return calls.size();
    }

    /** Frees every call. */
    void freeAll()
    {
        for (final Prepared prepared : calls.values())
        {
            prepared.call.free();
        }
        calls.clear();
    }

    /** One prepared call and the SGEs it was built for. */
    private static final class Prepared
    {
        final SVCPostRecv call;
        private final long[] addresses;
        private final int[] lengths;
        private final int[] lkeys;

        Prepared(final SVCPostRecv call, final RecvRequest request)
        {
            this.call = call;
            final int count = request.sgeCount();
            addresses = new long[count];
            lengths = new int[count];
            lkeys = new int[count];
            for (int i = 0; i < count; i++)
            {
                addresses[i] = request.sgeAddress(i);
                lengths[i] = request.sgeLength(i);
                lkeys[i] = request.sgeLkey(i);
            }
        }

        boolean matches(final RecvRequest request)
        {
            if (request.sgeCount() != addresses.length)
            {
                return false;
            }
            for (int i = 0; i < addresses.length; i++)
            {
                if (addresses[i] != request.sgeAddress(i) || lengths[i] != request.sgeLength(i) ||
                    lkeys[i] != request.sgeLkey(i))
                {
                    return false;
                }
            }
            return true;
        }
    }
}
