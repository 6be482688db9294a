package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.util.MemoryAllocation;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.SVCPostRecv;
import com.ibm.disni.verbs.SVCPostSend;
import com.ibm.disni.verbs.impl.NatIbvSendWR;
import com.ibm.disni.verbs.impl.NatPostRecvCall;
import com.ibm.disni.verbs.impl.NatPostSendCall;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Which prepared DiSNi call a post uses. Sends and receives are built as DiSNi 2.1 builds them, with its
 * real {@code NatPostSendCall}/{@code NatPostRecvCall} (they serialise the work request into a direct buffer
 * without libdisni; only {@code execute()} needs it), and the test reads back the native
 * {@code struct ibv_send_wr}. The fakes below serve only the fallback for calls that are not DiSNi 2.1's.
 */
class DisniPostCacheTest
{
    private final List<NatPostSendCall> sendCalls = new ArrayList<>();
    private final List<NatPostRecvCall> recvCalls = new ArrayList<>();
    private final PostSendCache sends = new PostSendCache(template ->
    {
        final NatPostSendCall call = new NatPostSendCall(null, null, MemoryAllocation.getInstance(), null, List.of(template));
        sendCalls.add(call);
        return call;
    }, 4);
    private final PostRecvCache recvs = new PostRecvCache(template ->
    {
        final NatPostRecvCall call = new NatPostRecvCall(null, null, MemoryAllocation.getInstance(), null, List.of(template));
        recvCalls.add(call);
        return call;
    }, 3);

    @AfterEach
    void freeCalls()
    {
        sends.freeAll();
        recvs.freeAll();
    }

    @Test
    void shouldReuseOneCallPerOpcodeAndSgeCountAndModifyItInPlace() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND).wrId(1);
        request.setSge(0x1000L, 64, 7);
        final SVCPostSend first = sends.prepare(request);

        request.wrId(2).flags(SendRequest.FLAG_SIGNALED | SendRequest.FLAG_SOLICITED);
        request.setSge(0x2000L, 128, 8);
        final SVCPostSend second = sends.prepare(request);

        assertThat(second).isSameAs(first);
        assertThat(sends.built()).isEqualTo(1);
        final NativeSendWr wr = NativeSendWr.of(second);
        assertThat(wr.wrId()).isEqualTo(2);
        assertThat(wr.sendFlags()).isEqualTo(IbvSendWR.IBV_SEND_SIGNALED | IbvSendWR.IBV_SEND_SOLICITED);
        assertThat(wr.numSge()).isEqualTo(1);
        assertThat(wr.sgeAddr(0)).isEqualTo(0x2000L);
        assertThat(wr.sgeLength(0)).isEqualTo(128);
        assertThat(wr.sgeLkey(0)).isEqualTo(8);
        assertThat(wr.opcode()).isEqualTo(IbvSendWR.IBV_WR_SEND);
    }

    /**
     * Issue 24, part 2 item 6: on a QP created with max_inline_data 256, SENDs and WRITEs of 1..256 bytes go inline
     * (the native work request carries IBV_SEND_INLINE), larger ones, empty ones and READs do not; the flag is
     * cleared again on the reused call; a QP without inline data never sets it.
     */
    @Test
    void shouldPostSmallSendsAndWritesInlineUpToTheQpsLimit() throws Exception
    {
        // The PD holds one region, lkey 7, [0x1000, 0x1400).
        final PostSendCache inline = new PostSendCache(template ->
            new NatPostSendCall(null, null, MemoryAllocation.getInstance(), null, List.of(template)), 4, 256,
            (lkey, address, length) -> lkey == 7 && address >= 0x1000L && address + length <= 0x1400L);
        try
        {
            final SendRequest request = new SendRequest().opcode(WrOpcode.SEND_WITH_IMM).immData(3);
            request.setSge(0x1000L, 200, 7);
            request.addSge(0x1200L, 56, 7);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags())
                .isEqualTo(IbvSendWR.IBV_SEND_SIGNALED | IbvSendWR.IBV_SEND_INLINE);

            request.setSge(0x1000L, 257, 7);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags()).as("over the limit")
                .isEqualTo(IbvSendWR.IBV_SEND_SIGNALED);
            request.setSge(0x1000L, 64, 7);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags() & IbvSendWR.IBV_SEND_INLINE).isNotZero();
            // A wrong key or a range beyond the region goes gathered, so that the HCA reports it (an inline send's
            // data is copied at post time and the HCA checks no key).
            request.setSge(0x1000L, 64, 8);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags() & IbvSendWR.IBV_SEND_INLINE).isZero();
            request.setSge(0x13F0L, 64, 7);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags() & IbvSendWR.IBV_SEND_INLINE).isZero();
            request.setSge(0x1000L, 64, 7);

            request.opcode(WrOpcode.RDMA_WRITE).remoteAddress(0xBEEFL).rkey(9);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags() & IbvSendWR.IBV_SEND_INLINE).isNotZero();
            request.opcode(WrOpcode.RDMA_READ);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags() & IbvSendWR.IBV_SEND_INLINE)
                .as("a READ never goes inline").isZero();
            request.opcode(WrOpcode.SEND).setSge(0x1000L, 0, 7);
            assertThat(NativeSendWr.of(inline.prepare(request)).sendFlags() & IbvSendWR.IBV_SEND_INLINE).isZero();

            final SendRequest small = new SendRequest().opcode(WrOpcode.SEND);
            small.setSge(0x1000L, 8, 7);
            assertThat(NativeSendWr.of(sends.prepare(small)).sendFlags() & IbvSendWR.IBV_SEND_INLINE)
                .as("a QP without inline data").isZero();
        }
        finally
        {
            inline.freeAll();
        }
    }

    @Test
    void shouldAskTheDeviceForInlineDataLargestFirstDownToTheRequestedSize()
    {
        assertThat(DisniVerbsContext.inlineCandidates(0)).containsExactly(256, 128, 64, 0);
        assertThat(DisniVerbsContext.inlineCandidates(100)).containsExactly(256, 128, 100);
        assertThat(DisniVerbsContext.inlineCandidates(512)).containsExactly(512);
    }

    @Test
    void shouldBuildAnotherCallWhenOpcodeOrSgeCountChanges() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND);
        request.setSge(0x1000L, 64, 7);
        final SVCPostSend send = sends.prepare(request);

        request.opcode(WrOpcode.RDMA_WRITE).remoteAddress(0xBEEFL).rkey(99);
        final SVCPostSend write = sends.prepare(request);

        request.addSge(0x3000L, 16, 7);
        final SVCPostSend writeTwoSges = sends.prepare(request);

        assertThat(write).isNotSameAs(send);
        assertThat(NativeSendWr.of(write).opcode()).isEqualTo(IbvSendWR.IBV_WR_RDMA_WRITE);
        assertThat(NativeSendWr.of(write).remoteAddr()).isEqualTo(0xBEEFL);
        assertThat(NativeSendWr.of(write).rkey()).isEqualTo(99);
        assertThat(writeTwoSges).isNotSameAs(write);
        assertThat(NativeSendWr.of(writeTwoSges).numSge()).isEqualTo(2);
        assertThat(NativeSendWr.of(writeTwoSges).sgeAddr(1)).isEqualTo(0x3000L);
        assertThat(sends.built()).isEqualTo(3);
    }

    @Test
    void shouldBuildOneCallForTenThousandRendezvousWritesWithEverIncreasingImmediates() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).rkey(5);
        request.setSge(0x1000L, 1 << 20, 7);
        SVCPostSend call = null;
        for (int id = 1; id <= 10_000; id++)
        {
            request.wrId(id).immData(id).remoteAddress(0x10_0000L * id);
            call = sends.prepare(request);
            final NativeSendWr wr = NativeSendWr.of(call);
            if (WorkRequestTranslator.immFromDisni(wr.immData()) != id || wr.remoteAddr() != 0x10_0000L * id ||
                wr.wrId() != id || wr.opcode() != IbvSendWR.IBV_WR_RDMA_WRITE_WITH_IMM)
            {
                throw new AssertionError("write " + id + " would post " + wr);
            }
        }

        assertThat(sends.built()).as("call objects built over 10,000 writes").isEqualTo(1);
        assertThat(sendCalls).hasSize(1);
        assertThat(sends.size()).isEqualTo(1);
        assertThat(WorkRequestTranslator.immFromDisni(NativeSendWr.of(call).immData())).isEqualTo(10_000);
        assertThat(call.getWrMod(0).getOpcode()).isEqualTo(IbvSendWR.IBV_WR_RDMA_WRITE_WITH_IMM);
    }

    @Test
    void shouldPatchTheImmediateOfSendWithImmInPlaceAndKeepTheWireByteOrder() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND_WITH_IMM);
        request.setSge(0x1000L, 64, 7);

        final SVCPostSend first = sends.prepare(request.immData(0x01020304));
        final ByteBuffer bytes = NativeSendWr.of(first).rawImmediate();
        final SVCPostSend second = sends.prepare(request.immData(0x0A0B0C0D));

        assertThat(second).isSameAs(first);
        // imm_data is a __be32: the bytes in memory are the value in network order, whatever the host.
        assertThat(bytes.array()).containsExactly(1, 2, 3, 4);
        assertThat(NativeSendWr.of(second).rawImmediate().array()).containsExactly(0x0A, 0x0B, 0x0C, 0x0D);
    }

    @Test
    void shouldFallBackToOneCallPerImmediateForCallsItCannotPatchAndBoundThem() throws Exception
    {
        final List<FakePostSend> fakes = new ArrayList<>();
        final PostSendCache fallback = new PostSendCache(template ->
        {
            final FakePostSend call = new FakePostSend(template);
            fakes.add(call);
            return call;
        }, 4);
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND_WITH_IMM);
        request.setSge(0x1000L, 64, 7);
        final SendRequest plain = new SendRequest().opcode(WrOpcode.SEND);
        plain.setSge(0x1000L, 64, 7);
        final FakePostSend plainCall = (FakePostSend)fallback.prepare(plain);

        final FakePostSend imm1 = (FakePostSend)fallback.prepare(request.immData(1));
        final FakePostSend imm1Again = (FakePostSend)fallback.prepare(request.immData(1));
        assertThat(imm1Again).as("a repeated immediate reuses its call").isSameAs(imm1);
        assertThat(WorkRequestTranslator.immFromDisni(imm1.wr.imm)).isEqualTo(1);
        for (int imm = 2; imm <= 5; imm++)
        {
            final FakePostSend call = (FakePostSend)fallback.prepare(request.immData(imm));
            assertThat(WorkRequestTranslator.immFromDisni(call.wr.imm)).isEqualTo(imm);
        }

        assertThat(fallback.size()).as("limit 4 immediates: the fifth started over, plus the plain call").isEqualTo(2);
        assertThat(fakes.subList(1, 5)).allMatch(call -> call.freed);
        assertThat(fakes.get(5).freed).isFalse();
        assertThat(plainCall.freed).as("plain calls are never dropped").isFalse();

        fallback.freeAll();
        assertThat(fakes).allMatch(call -> call.freed);
        assertThat(fallback.size()).isZero();
    }

    @Test
    void shouldFreeEveryCallItBuilt() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).immData(3);
        request.setSge(0x1000L, 64, 7);
        sends.prepare(request);
        sends.prepare(request.opcode(WrOpcode.SEND));

        sends.freeAll();

        assertThat(sendCalls).hasSize(2).noneMatch(SVCPostSend::isValid);
        assertThat(sends.size()).isZero();
    }

    @Test
    void shouldReuseAReceiveCallForTheSameSlotAndRebuildItWhenTheSlotChanges() throws Exception
    {
        final RecvRequest request = new RecvRequest().wrId(5);
        request.setSge(0x1000L, 4096, 3);

        final SVCPostRecv first = recvs.prepare(request);
        final SVCPostRecv again = recvs.prepare(request);
        request.setSge(0x2000L, 4096, 3);
        final SVCPostRecv moved = recvs.prepare(request);

        assertThat(again).isSameAs(first);
        assertThat(moved).isNotSameAs(first);
        assertThat(first.isValid()).as("the replaced call was freed").isFalse();
        assertThat(moved.getWrMod(0).getWr_id()).isEqualTo(5);
        assertThat(recvs.built()).isEqualTo(2);
    }

    @Test
    void shouldKeepOneReceiveCallPerWrIdWithinTheLimit() throws Exception
    {
        final RecvRequest request = new RecvRequest();
        for (int slot = 0; slot < 3; slot++)
        {
            request.wrId(slot).setSge(0x1000L * (slot + 1), 64, 1);
            recvs.prepare(request);
        }
        for (int slot = 0; slot < 3; slot++)
        {
            request.wrId(slot).setSge(0x1000L * (slot + 1), 64, 1);
            recvs.prepare(request);
        }
        assertThat(recvs.built()).isEqualTo(3);

        request.wrId(3).setSge(0x9000L, 64, 1);
        recvs.prepare(request);

        assertThat(recvs.size()).isEqualTo(1);
        assertThat(recvCalls.subList(0, 3)).noneMatch(SVCPostRecv::isValid);
    }

    /**
     * Reads a {@code struct ibv_send_wr} and its SGEs out of a real {@code NatPostSendCall}'s native buffer,
     * at the C ABI offsets (independently of DiSNi's Java mirror objects).
     */
    record NativeSendWr(ByteBuffer buffer, int position)
    {
        static NativeSendWr of(final SVCPostSend call) throws IOException
        {
            final ByteBuffer buffer = PostSendCache.nativeWorkRequests(call);
            assertThat(buffer).as("DiSNi 2.1's NatPostSendCall buffer").isNotNull();
            return new NativeSendWr(buffer, ((NatIbvSendWR)call.getWrMod(0)).getBufPosition());
        }

        long wrId()
        {
            return buffer.getLong(position);
        }

        int numSge()
        {
            return buffer.getInt(position + 24);
        }

        int opcode()
        {
            return buffer.getInt(position + 28);
        }

        int sendFlags()
        {
            return buffer.getInt(position + 32);
        }

        int immData()
        {
            return buffer.getInt(position + 36);
        }

        ByteBuffer rawImmediate()
        {
            final byte[] bytes = new byte[4];
            for (int i = 0; i < 4; i++)
            {
                bytes[i] = buffer.get(position + 36 + i);
            }
            return ByteBuffer.wrap(bytes);
        }

        long remoteAddr()
        {
            return buffer.getLong(position + 40);
        }

        int rkey()
        {
            return buffer.getInt(position + 48);
        }

        // One work request per call: its SGEs follow the 72-byte struct (DiSNi stores sg_list as an absolute pointer).
        long sgeAddr(final int index)
        {
            return buffer.getLong(NatIbvSendWR.CSIZE + 16 * index);
        }

        int sgeLength(final int index)
        {
            return buffer.getInt(NatIbvSendWR.CSIZE + 16 * index + 8);
        }

        int sgeLkey(final int index)
        {
            return buffer.getInt(NatIbvSendWR.CSIZE + 16 * index + 12);
        }

        @Override
        public String toString()
        {
            return "ibv_send_wr{wr_id=" + wrId() + ", opcode=" + opcode() + ", imm=0x" + Integer.toHexString(immData()) +
                ", remote_addr=0x" + Long.toHexString(remoteAddr()) + '}';
        }
    }

    /** DiSNi's native send work request as a fake: opcode, immediate and SGE count fixed at build time. */
    static final class FakeWr implements SVCPostSend.SendWRMod, SVCPostSend.RdmaMod
    {
        final int opcode;
        final int imm;
        final List<FakeSge> sges = new ArrayList<>();
        long wrId;
        int flags;
        long remoteAddress;
        int rkey;

        FakeWr(final IbvSendWR template)
        {
            opcode = template.getOpcode();
            imm = template.getImm_data();
            wrId = template.getWr_id();
            flags = template.getSend_flags();
            remoteAddress = template.getRdma().getRemote_addr();
            rkey = template.getRdma().getRkey();
            for (final IbvSge sge : template.getSg_list())
            {
                final FakeSge fake = new FakeSge();
                fake.addr = sge.getAddr();
                fake.length = sge.getLength();
                fake.lkey = sge.getLkey();
                sges.add(fake);
            }
        }

        @Override
        public void setWr_id(final long wrId)
        {
            this.wrId = wrId;
        }

        @Override
        public void setSend_flags(final int flags)
        {
            this.flags = flags;
        }

        @Override
        public long getWr_id()
        {
            return wrId;
        }

        @Override
        public int getNum_sge()
        {
            return sges.size();
        }

        @Override
        public int getOpcode()
        {
            return opcode;
        }

        @Override
        public int getSend_flags()
        {
            return flags;
        }

        @Override
        public SVCPostSend.RdmaMod getRdmaMod()
        {
            return this;
        }

        @Override
        public SVCPostSend.SgeMod getSgeMod(final int index)
        {
            return sges.get(index);
        }

        @Override
        public void setRemote_addr(final long remoteAddress)
        {
            this.remoteAddress = remoteAddress;
        }

        @Override
        public long getRemote_addr()
        {
            return remoteAddress;
        }

        @Override
        public void setRkey(final int rkey)
        {
            this.rkey = rkey;
        }

        @Override
        public int getRkey()
        {
            return rkey;
        }

        @Override
        public void setReserved(final int reserved)
        {
        }

        @Override
        public int getReserved()
        {
            return 0;
        }
    }

    /** A modifiable SGE of the fake. */
    static final class FakeSge implements SVCPostSend.SgeMod
    {
        long addr;
        int length;
        int lkey;

        @Override
        public void setAddr(final long addr)
        {
            this.addr = addr;
        }

        @Override
        public long getAddr()
        {
            return addr;
        }

        @Override
        public void setLength(final int length)
        {
            this.length = length;
        }

        @Override
        public int getLength()
        {
            return length;
        }

        @Override
        public void setLkey(final int lkey)
        {
            this.lkey = lkey;
        }

        @Override
        public int getLkey()
        {
            return lkey;
        }
    }

    /** A fake {@code SVCPostSend}. */
    static final class FakePostSend extends SVCPostSend
    {
        final FakeWr wr;
        boolean freed;

        FakePostSend(final IbvSendWR template)
        {
            wr = new FakeWr(template);
        }

        @Override
        public SendWRMod getWrMod(final int index)
        {
            return wr;
        }

        @Override
        public SVCPostSend execute()
        {
            return this;
        }

        @Override
        public boolean isValid()
        {
            return !freed;
        }

        @Override
        public SVCPostSend free()
        {
            freed = true;
            return this;
        }
    }
}
