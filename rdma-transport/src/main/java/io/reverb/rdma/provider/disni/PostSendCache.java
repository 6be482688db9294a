package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.SVCPostSend;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The prepared {@code SVCPostSend} calls of one queue pair, and the rule for reusing them.
 *
 * <p>A DiSNi {@code SVCPostSend} serialises its work request to native memory once; afterwards only
 * {@code wr_id}, {@code send_flags}, the RDMA remote address and rkey, and each SGE's address, length and
 * lkey can be changed in place. Opcode, immediate and number of SGEs cannot. So:
 * <ul>
 *   <li>opcodes without immediate get one prepared call per (opcode, SGE count): at most 5 x 5, built on
 *       first use and then only modified in place, so SEND / RDMA_WRITE / RDMA_READ allocate nothing;</li>
 *   <li>SEND_WITH_IMM and RDMA_WRITE_WITH_IMM get one prepared call per (opcode, SGE count, immediate) in a
 *       bounded map; when it holds {@code immLimit} calls it frees them all and starts again. The engine's
 *       immediates are rendezvous ids from a bounded pool, so they repeat and hit the map; a new one costs
 *       one call build (DiSNi pools the small direct buffer), never a wrong immediate.</li>
 * </ul>
 * Not thread-safe: the queue pair serialises sends.
 */
final class PostSendCache
{
    /** Builds a stateful call for a work request (DiSNi: {@code qp.postSend(List.of(wr), null)}). */
    @FunctionalInterface
    interface Factory
    {
        /**
         * @param template the work request, as {@link WorkRequestTranslator#newSendWr} builds it.
         * @return a prepared call.
         * @throws IOException if DiSNi refuses.
         */
        SVCPostSend prepare(IbvSendWR template) throws IOException;
    }

    private final Factory factory;
    private final int immLimit;
    private final Prepared[][] plain = new Prepared[WrOpcode.values().length][ScatterGatherList.MAX_SGE + 1];
    private final Long2ObjectHashMap<Prepared> withImm = new Long2ObjectHashMap<>();
    private int built;

    PostSendCache(final Factory factory, final int immLimit)
    {
        this.factory = factory;
        this.immLimit = immLimit;
    }

    /**
     * Finds or builds the call for {@code request}'s shape and writes the request's modifiable fields
     * into it.
     *
     * @param request SPI request (opcode non-null, at most {@link ScatterGatherList#MAX_SGE} SGEs).
     * @return the call, ready to {@code execute()}.
     * @throws IOException if a new call cannot be built.
     */
    SVCPostSend prepare(final SendRequest request) throws IOException
    {
        final Prepared prepared = lookup(request);
        prepared.apply(request);
        return prepared.call;
    }

    private Prepared lookup(final SendRequest request) throws IOException
    {
        final WrOpcode opcode = request.opcode();
        final int sges = request.sgeCount();
        if (!opcode.hasImmediate())
        {
            Prepared prepared = plain[opcode.ordinal()][sges];
            if (prepared == null)
            {
                prepared = build(request);
                plain[opcode.ordinal()][sges] = prepared;
            }
            return prepared;
        }
        final long key = ((long)opcode.ordinal() << 40) | ((long)sges << 32) | (request.immData() & 0xFFFF_FFFFL);
        Prepared prepared = withImm.get(key);
        if (prepared == null)
        {
            if (withImm.size() >= immLimit)
            {
                freeImmediateCalls();
            }
            prepared = build(request);
            withImm.put(key, prepared);
        }
        return prepared;
    }

    private Prepared build(final SendRequest request) throws IOException
    {
        final Prepared prepared = new Prepared(factory.prepare(WorkRequestTranslator.newSendWr(request)), request);
        built++;
        return prepared;
    }

    /** @return calls built so far (for tests and diagnostics). */
    int built()
    {
        return built;
    }

    /** @return calls currently held. */
    int size()
    {
        int size = withImm.size();
        for (final Prepared[] row : plain)
        {
            for (final Prepared prepared : row)
            {
                size += prepared == null ? 0 : 1;
            }
        }
        return size;
    }

    private void freeImmediateCalls()
    {
        for (final Prepared prepared : withImm.values())
        {
            prepared.call.free();
        }
        withImm.clear();
    }

    /** Frees every call (the QP is being destroyed). */
    void freeAll()
    {
        freeImmediateCalls();
        for (final Prepared[] row : plain)
        {
            for (int i = 0; i < row.length; i++)
            {
                if (row[i] != null)
                {
                    row[i].call.free();
                    row[i] = null;
                }
            }
        }
    }

    /** One prepared call and handles on its modifiable fields. */
    private static final class Prepared
    {
        final SVCPostSend call;
        private final SVCPostSend.SendWRMod wr;
        private final SVCPostSend.RdmaMod rdma;
        private final SVCPostSend.SgeMod[] sges;
        private final boolean isRdma;

        Prepared(final SVCPostSend call, final SendRequest request) throws IOException
        {
            this.call = call;
            this.wr = call.getWrMod(0);
            this.isRdma = WorkRequestTranslator.isRdma(request.opcode());
            this.rdma = isRdma ? wr.getRdmaMod() : null;
            this.sges = new SVCPostSend.SgeMod[request.sgeCount()];
            for (int i = 0; i < sges.length; i++)
            {
                sges[i] = wr.getSgeMod(i);
            }
        }

        /** Writes the request's modifiable fields into the call's native work request. Allocation-free. */
        void apply(final SendRequest request)
        {
            wr.setWr_id(request.wrId());
            wr.setSend_flags(WorkRequestTranslator.toDisniSendFlags(request.flags()));
            if (isRdma)
            {
                rdma.setRemote_addr(request.remoteAddress());
                rdma.setRkey(request.rkey());
            }
            for (int i = 0; i < sges.length; i++)
            {
                final SVCPostSend.SgeMod sge = sges[i];
                sge.setAddr(request.sgeAddress(i));
                sge.setLength(request.sgeLength(i));
                sge.setLkey(request.sgeLkey(i));
            }
        }
    }
}
