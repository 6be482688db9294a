package io.reverb.rdma.provider.disni;

import com.ibm.disni.util.MemBuf;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.SVCPostSend;
import com.ibm.disni.verbs.impl.NatIbvSendWR;
import com.ibm.disni.verbs.impl.NatPostSendCall;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The prepared {@code SVCPostSend} calls of one queue pair, and the rule for reusing them.
 *
 * <p>A DiSNi {@code SVCPostSend} serialises its work request to native memory once; afterwards its API
 * can change only {@code wr_id}, {@code send_flags}, the RDMA remote address and rkey, and each SGE's
 * address, length and lkey. Opcode, immediate and number of SGEs cannot be changed through it. So:
 * <ul>
 *   <li>every opcode gets one prepared call per (opcode, SGE count): at most 5 x 5, built on first use and
 *       then only modified in place, so no post allocates;</li>
 *   <li>for SEND_WITH_IMM and RDMA_WRITE_WITH_IMM the immediate is patched in place too: DiSNi 2.1's
 *       {@code NatPostSendCall} keeps the serialised {@code struct ibv_send_wr} in a direct buffer (its
 *       private field {@code cmd}) and {@code NatIbvSendWR.getBufPosition()} says where; {@code imm_data}
 *       is at byte {@value #IMM_DATA_OFFSET} of the struct (DiSNi's own, commented-out
 *       {@code IMMDATA_OFFSET}). The engine's immediates are message ids that never repeat, so a cache
 *       keyed by immediate would never hit;</li>
 *   <li>only if that buffer cannot be reached (a DiSNi other than 2.1, or a call that is not a
 *       {@code NatPostSendCall}) are calls kept per (opcode, SGE count, immediate) in a bounded map that is
 *       freed when it holds {@code immLimit} calls: correct (never a wrong immediate), but one call build
 *       per new immediate.</li>
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

    /** Offset of {@code imm_data} in {@code struct ibv_send_wr} (x86_64/aarch64/ppc64le ABI). */
    static final int IMM_DATA_OFFSET = 36;
    /** Offset of {@code opcode} in {@code struct ibv_send_wr}, checked before patching. */
    static final int OPCODE_OFFSET = 28;

    private static final Field CMD_FIELD = cmdField();

    private final Factory factory;
    private final int immLimit;
    private final int inlineLimit;
    private final LocalCheck check;
    private final Prepared[][] plain = new Prepared[WrOpcode.values().length][ScatterGatherList.MAX_SGE + 1];
    private final Long2ObjectHashMap<Prepared> withImm = new Long2ObjectHashMap<>();
    private int built;

    /** What an inline send's SGEs must pass, since the HCA checks no key for inline data. */
    @FunctionalInterface
    interface LocalCheck
    {
        /**
         * @param lkey    the SGE's key.
         * @param address its address.
         * @param length  its length.
         * @return true if the key is a live region of the QP's PD holding the range.
         */
        boolean holds(int lkey, long address, int length);
    }

    PostSendCache(final Factory factory, final int immLimit)
    {
        this(factory, immLimit, 0, (lkey, address, length) -> false);
    }

    /**
     * @param factory     builds calls.
     * @param immLimit    calls kept per immediate when the immediate cannot be patched.
     * @param inlineLimit the QP's {@code max_inline_data}: SEND and RDMA_WRITE requests (with or without immediate)
     *                    of 1..inlineLimit bytes are posted with {@code IBV_SEND_INLINE}, if their SGEs pass
     *                    {@code check}; others keep the gather path, where the HCA fails a bad key or range.
     * @param check       the local key and bounds check.
     */
    PostSendCache(final Factory factory, final int immLimit, final int inlineLimit, final LocalCheck check)
    {
        this.factory = factory;
        this.immLimit = immLimit;
        this.inlineLimit = inlineLimit;
        this.check = check;
    }

    /**
     * @param request a send request.
     * @return {@link SendRequest#FLAG_INLINE} if the request goes inline on this QP, else 0.
     */
    int inlineFlag(final SendRequest request)
    {
        if (inlineLimit <= 0 || request.opcode() == WrOpcode.RDMA_READ)
        {
            return 0;
        }
        long length = 0;
        for (int i = 0; i < request.sgeCount(); i++)
        {
            length += request.sgeLength(i);
        }
        if (length <= 0 || length > inlineLimit)
        {
            return 0;
        }
        for (int i = 0; i < request.sgeCount(); i++)
        {
            if (!check.holds(request.sgeLkey(i), request.sgeAddress(i), request.sgeLength(i)))
            {
                // A bad key or range: posted gathered, so that the HCA reports it (LOC_PROT_ERR, LOC_LEN_ERR).
                return 0;
            }
        }
        return SendRequest.FLAG_INLINE;
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
        prepared.apply(request, inlineFlag(request));
        return prepared.call;
    }

    private Prepared lookup(final SendRequest request) throws IOException
    {
        final WrOpcode opcode = request.opcode();
        final int sges = request.sgeCount();
        Prepared prepared = plain[opcode.ordinal()][sges];
        if (prepared != null)
        {
            return prepared;
        }
        if (!opcode.hasImmediate())
        {
            prepared = build(request);
            plain[opcode.ordinal()][sges] = prepared;
            return prepared;
        }
        final long key = ((long)opcode.ordinal() << 40) | ((long)sges << 32) | (request.immData() & 0xFFFF_FFFFL);
        prepared = withImm.get(key);
        if (prepared == null)
        {
            prepared = build(request);
            if (prepared.canPatchImmediate())
            {
                // Reused for every immediate from now on.
                plain[opcode.ordinal()][sges] = prepared;
                return prepared;
            }
            if (withImm.size() >= immLimit)
            {
                freeImmediateCalls();
            }
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

    /**
     * @param call a prepared call.
     * @return the direct buffer holding its serialised work requests, or null if it is not DiSNi 2.1's
     *         {@code NatPostSendCall} or the buffer cannot be reached.
     */
    static ByteBuffer nativeWorkRequests(final SVCPostSend call)
    {
        if (CMD_FIELD == null || !(call instanceof NatPostSendCall))
        {
            return null;
        }
        try
        {
            final Object cmd = CMD_FIELD.get(call);
            return cmd instanceof MemBuf ? ((MemBuf)cmd).getBuffer() : null;
        }
        catch (final IllegalAccessException | RuntimeException ex)
        {
            return null;
        }
    }

    private static Field cmdField()
    {
        try
        {
            final Field field = NatPostSendCall.class.getDeclaredField("cmd");
            if (field.getType() != MemBuf.class)
            {
                return null;
            }
            field.setAccessible(true);
            return field;
        }
        catch (final NoSuchFieldException | RuntimeException | LinkageError ex)
        {
            // Another DiSNi: fall back to one call per immediate.
            return null;
        }
    }

    /** One prepared call and handles on its modifiable fields. */
    private static final class Prepared
    {
        final SVCPostSend call;
        private final SVCPostSend.SendWRMod wr;
        /** The call's native work request buffer and the position of imm_data in it; null if not patchable. */
        private final ByteBuffer nativeWr;
        private final int immPosition;
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
            final ByteBuffer buffer = request.opcode().hasImmediate() && wr instanceof NatIbvSendWR ?
                nativeWorkRequests(call) : null;
            final int position = buffer == null ? -1 : ((NatIbvSendWR)wr).getBufPosition() + IMM_DATA_OFFSET;
            if (buffer != null && position >= IMM_DATA_OFFSET && position + Integer.BYTES <= buffer.capacity() &&
                buffer.getInt(position) == ((NatIbvSendWR)wr).getImm_data() &&
                buffer.getInt(position - IMM_DATA_OFFSET + OPCODE_OFFSET) == wr.getOpcode())
            {
                // The buffer holds the immediate where we expect it: patching is safe.
                this.nativeWr = buffer;
                this.immPosition = position;
            }
            else
            {
                this.nativeWr = null;
                this.immPosition = -1;
            }
        }

        boolean canPatchImmediate()
        {
            return nativeWr != null;
        }

        /** Writes the request's modifiable fields into the call's native work request. Allocation-free. */
        void apply(final SendRequest request, final int extraFlags)
        {
            if (nativeWr != null)
            {
                // Same byte order as DiSNi's own serialisation (a native-order buffer, see WorkRequestTranslator).
                final int imm = WorkRequestTranslator.immToDisni(request.immData());
                nativeWr.putInt(immPosition, imm);
                ((NatIbvSendWR)wr).setImm_data(imm);
            }
            wr.setWr_id(request.wrId());
            wr.setSend_flags(WorkRequestTranslator.toDisniSendFlags(request.flags() | extraFlags));
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
