package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.SVCPostRecv;
import com.ibm.disni.verbs.SVCPostSend;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which prepared DiSNi call a post uses, against fakes that behave like DiSNi's stateful calls: the
 * work request is fixed when the call is built, and only wr_id, send flags, remote address/rkey and SGE
 * address/length/lkey can be changed afterwards.
 */
class DisniPostCacheTest
{
    private final List<FakePostSend> sendCalls = new ArrayList<>();
    private final List<FakePostRecv> recvCalls = new ArrayList<>();
    private final PostSendCache sends = new PostSendCache(template ->
    {
        final FakePostSend call = new FakePostSend(template);
        sendCalls.add(call);
        return call;
    }, 4);
    private final PostRecvCache recvs = new PostRecvCache(template ->
    {
        final FakePostRecv call = new FakePostRecv(template);
        recvCalls.add(call);
        return call;
    }, 3);

    @Test
    void shouldReuseOneCallPerOpcodeAndSgeCountAndModifyItInPlace() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND).wrId(1);
        request.setSge(0x1000L, 64, 7);
        final FakePostSend first = (FakePostSend)sends.prepare(request);

        request.wrId(2).flags(SendRequest.FLAG_SIGNALED | SendRequest.FLAG_SOLICITED);
        request.setSge(0x2000L, 128, 8);
        final FakePostSend second = (FakePostSend)sends.prepare(request);

        assertThat(second).isSameAs(first);
        assertThat(sends.built()).isEqualTo(1);
        assertThat(second.wr.wrId).isEqualTo(2);
        assertThat(second.wr.flags).isEqualTo(IbvSendWR.IBV_SEND_SIGNALED | IbvSendWR.IBV_SEND_SOLICITED);
        assertThat(second.wr.sges.get(0).addr).isEqualTo(0x2000L);
        assertThat(second.wr.sges.get(0).length).isEqualTo(128);
        assertThat(second.wr.sges.get(0).lkey).isEqualTo(8);
        assertThat(second.wr.opcode).isEqualTo(IbvSendWR.IBV_WR_SEND);
    }

    @Test
    void shouldBuildAnotherCallWhenOpcodeOrSgeCountChanges() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND);
        request.setSge(0x1000L, 64, 7);
        final SVCPostSend send = sends.prepare(request);

        request.opcode(WrOpcode.RDMA_WRITE).remoteAddress(0xBEEFL).rkey(99);
        final FakePostSend write = (FakePostSend)sends.prepare(request);

        request.addSge(0x3000L, 16, 7);
        final FakePostSend writeTwoSges = (FakePostSend)sends.prepare(request);

        assertThat(write).isNotSameAs(send);
        assertThat(write.wr.opcode).isEqualTo(IbvSendWR.IBV_WR_RDMA_WRITE);
        assertThat(write.wr.remoteAddress).isEqualTo(0xBEEFL);
        assertThat(write.wr.rkey).isEqualTo(99);
        assertThat(writeTwoSges).isNotSameAs(write);
        assertThat(writeTwoSges.wr.sges).hasSize(2);
        assertThat(sends.built()).isEqualTo(3);
    }

    @Test
    void shouldNeverPostAnImmediateOtherThanTheRequests() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).remoteAddress(0x10L).rkey(1);
        request.setSge(0x1000L, 64, 7);

        final FakePostSend imm1 = (FakePostSend)sends.prepare(request.immData(1));
        final FakePostSend imm2 = (FakePostSend)sends.prepare(request.immData(2));
        final FakePostSend imm1Again = (FakePostSend)sends.prepare(request.immData(1));

        assertThat(imm2).isNotSameAs(imm1);
        assertThat(imm1Again).as("a repeated immediate reuses its call").isSameAs(imm1);
        assertThat(WorkRequestTranslator.immFromDisni(imm1.wr.imm)).isEqualTo(1);
        assertThat(WorkRequestTranslator.immFromDisni(imm2.wr.imm)).isEqualTo(2);
        assertThat(sends.built()).isEqualTo(2);
    }

    @Test
    void shouldBoundTheImmediateCallsAndFreeWhatItDrops() throws Exception
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND_WITH_IMM);
        request.setSge(0x1000L, 64, 7);
        final SendRequest plain = new SendRequest().opcode(WrOpcode.SEND);
        plain.setSge(0x1000L, 64, 7);
        final FakePostSend plainCall = (FakePostSend)sends.prepare(plain);

        for (int imm = 0; imm < 5; imm++)
        {
            sends.prepare(request.immData(imm));
        }

        assertThat(sends.size()).as("limit 4 immediates: the fifth started over, plus the plain call").isEqualTo(2);
        assertThat(sendCalls.subList(1, 5)).allMatch(call -> call.freed);
        assertThat(sendCalls.get(5).freed).isFalse();
        assertThat(plainCall.freed).as("plain calls are never dropped").isFalse();

        sends.freeAll();
        assertThat(sendCalls).allMatch(call -> call.freed);
        assertThat(sends.size()).isZero();
    }

    @Test
    void shouldReuseAReceiveCallForTheSameSlotAndRebuildItWhenTheSlotChanges() throws Exception
    {
        final RecvRequest request = new RecvRequest().wrId(5);
        request.setSge(0x1000L, 4096, 3);

        final FakePostRecv first = (FakePostRecv)recvs.prepare(request);
        final FakePostRecv again = (FakePostRecv)recvs.prepare(request);
        request.setSge(0x2000L, 4096, 3);
        final FakePostRecv moved = (FakePostRecv)recvs.prepare(request);

        assertThat(again).isSameAs(first);
        assertThat(moved).isNotSameAs(first);
        assertThat(first.freed).isTrue();
        assertThat(moved.wrId).isEqualTo(5);
        assertThat(moved.sges.get(0).getAddr()).isEqualTo(0x2000L);
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
        assertThat(recvCalls.subList(0, 3)).allMatch(call -> call.freed);
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

    /** A fake {@code SVCPostRecv}: nothing can be modified. */
    static final class FakePostRecv extends SVCPostRecv
    {
        final long wrId;
        final List<IbvSge> sges;
        boolean freed;

        FakePostRecv(final IbvRecvWR template)
        {
            wrId = template.getWr_id();
            sges = new ArrayList<>(template.getSg_list());
        }

        @Override
        public RecvWRMod getWrMod(final int index)
        {
            return () -> wrId;
        }

        @Override
        public SVCPostRecv execute()
        {
            return this;
        }

        @Override
        public boolean isValid()
        {
            return !freed;
        }

        @Override
        public SVCPostRecv free()
        {
            freed = true;
            return this;
        }
    }
}
