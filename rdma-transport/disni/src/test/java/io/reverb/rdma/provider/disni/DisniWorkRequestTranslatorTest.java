package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * SPI work requests to DiSNi's and DiSNi's completions back: all pure Java, no libdisni needed.
 */
class DisniWorkRequestTranslatorTest
{
    @Test
    void shouldMapOpcodesToIbverbsValues()
    {
        assertThat(WorkRequestTranslator.toDisniOpcode(WrOpcode.RDMA_WRITE)).isEqualTo(0).isEqualTo(IbvSendWR.IBV_WR_RDMA_WRITE);
        assertThat(WorkRequestTranslator.toDisniOpcode(WrOpcode.RDMA_WRITE_WITH_IMM))
            .isEqualTo(1).isEqualTo(IbvSendWR.IBV_WR_RDMA_WRITE_WITH_IMM);
        assertThat(WorkRequestTranslator.toDisniOpcode(WrOpcode.SEND)).isEqualTo(2).isEqualTo(IbvSendWR.IBV_WR_SEND);
        assertThat(WorkRequestTranslator.toDisniOpcode(WrOpcode.SEND_WITH_IMM))
            .isEqualTo(3).isEqualTo(IbvSendWR.IBV_WR_SEND_WITH_IMM);
        assertThat(WorkRequestTranslator.toDisniOpcode(WrOpcode.RDMA_READ)).isEqualTo(4).isEqualTo(IbvSendWR.IBV_WR_RDMA_READ);
    }

    @ParameterizedTest
    @EnumSource(WrOpcode.class)
    void shouldAgreeWithSpiOpcodeValues(final WrOpcode opcode)
    {
        assertThat(WorkRequestTranslator.toDisniOpcode(opcode)).isEqualTo(opcode.value());
    }

    @Test
    void shouldMapEachSendFlagToItsIbverbsBit()
    {
        assertThat(WorkRequestTranslator.toDisniSendFlags(SendRequest.FLAG_FENCE))
            .isEqualTo(IbvSendWR.IBV_SEND_FENCE).isEqualTo(1);
        assertThat(WorkRequestTranslator.toDisniSendFlags(SendRequest.FLAG_SIGNALED))
            .isEqualTo(IbvSendWR.IBV_SEND_SIGNALED).isEqualTo(2);
        assertThat(WorkRequestTranslator.toDisniSendFlags(SendRequest.FLAG_SOLICITED))
            .isEqualTo(IbvSendWR.IBV_SEND_SOLICITED).isEqualTo(4);
        assertThat(WorkRequestTranslator.toDisniSendFlags(SendRequest.FLAG_INLINE))
            .isEqualTo(IbvSendWR.IBV_SEND_INLINE).isEqualTo(8);
        assertThat(WorkRequestTranslator.toDisniSendFlags(0)).isZero();
        assertThat(WorkRequestTranslator.toDisniSendFlags(SendRequest.FLAG_SIGNALED | SendRequest.FLAG_SOLICITED))
            .isEqualTo(IbvSendWR.IBV_SEND_SIGNALED | IbvSendWR.IBV_SEND_SOLICITED);
    }

    @Test
    void shouldMapAccessFlags()
    {
        assertThat(WorkRequestTranslator.toDisniAccess(Access.LOCAL_WRITE)).isEqualTo(IbvMr.IBV_ACCESS_LOCAL_WRITE);
        assertThat(WorkRequestTranslator.toDisniAccess(Access.REMOTE_WRITE)).isEqualTo(IbvMr.IBV_ACCESS_REMOTE_WRITE);
        assertThat(WorkRequestTranslator.toDisniAccess(Access.REMOTE_READ)).isEqualTo(IbvMr.IBV_ACCESS_REMOTE_READ);
        assertThat(WorkRequestTranslator.toDisniAccess(Access.ALL))
            .isEqualTo(IbvMr.IBV_ACCESS_LOCAL_WRITE | IbvMr.IBV_ACCESS_REMOTE_WRITE | IbvMr.IBV_ACCESS_REMOTE_READ);
        assertThat(WorkRequestTranslator.toDisniAccess(0)).isZero();
    }

    @Test
    void shouldTranslateRdmaWriteWithImmediate()
    {
        final SendRequest request = new SendRequest()
            .wrId(0x1122_3344_5566_7788L)
            .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
            .flags(SendRequest.FLAG_SIGNALED | SendRequest.FLAG_FENCE)
            .immData(0x0102_0304)
            .remoteAddress(0x7f00_dead_beefL)
            .rkey(0xCAFE);
        request.setSge(0x1000L, 4096, 17);

        final IbvSendWR wr = WorkRequestTranslator.newSendWr(request);

        assertThat(wr.getWr_id()).isEqualTo(0x1122_3344_5566_7788L);
        assertThat(wr.getOpcode()).isEqualTo(IbvSendWR.IBV_WR_RDMA_WRITE_WITH_IMM);
        assertThat(wr.getSend_flags()).isEqualTo(IbvSendWR.IBV_SEND_SIGNALED | IbvSendWR.IBV_SEND_FENCE);
        assertThat(wr.getRdma().getRemote_addr()).isEqualTo(0x7f00_dead_beefL);
        assertThat(wr.getRdma().getRkey()).isEqualTo(0xCAFE);
        assertThat(wr.getImm_data()).isEqualTo(WorkRequestTranslator.immToDisni(0x0102_0304));
        assertThat(wr.getNum_sge()).isEqualTo(1);
        assertSge(wr.getSg_list().get(0), 0x1000L, 4096, 17);
    }

    @Test
    void shouldCarryEveryScatterGatherEntryInOrder()
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.SEND);
        request.setSge(0x1000L, 10, 1);
        request.addSge(0x2000L, 20, 2);
        request.addSge(0x3000L, 30, 3);
        request.addSge(0x4000L, 40, 4);

        final IbvSendWR wr = WorkRequestTranslator.newSendWr(request);

        assertThat(wr.getNum_sge()).isEqualTo(4);
        final List<IbvSge> sges = wr.getSg_list();
        assertSge(sges.get(0), 0x1000L, 10, 1);
        assertSge(sges.get(1), 0x2000L, 20, 2);
        assertSge(sges.get(2), 0x3000L, 30, 3);
        assertSge(sges.get(3), 0x4000L, 40, 4);
    }

    @Test
    void shouldLeaveRemoteFieldsAndImmediateUnsetForPlainSend()
    {
        final SendRequest request = new SendRequest()
            .opcode(WrOpcode.SEND)
            .immData(42)
            .remoteAddress(99)
            .rkey(7);
        request.setSge(0x1000L, 64, 5);

        final IbvSendWR wr = WorkRequestTranslator.newSendWr(request);

        assertThat(wr.getOpcode()).isEqualTo(IbvSendWR.IBV_WR_SEND);
        assertThat(wr.getImm_data()).isZero();
        assertThat(wr.getRdma().getRemote_addr()).isZero();
        assertThat(wr.getRdma().getRkey()).isZero();
        assertThat(wr.getSend_flags()).isEqualTo(IbvSendWR.IBV_SEND_SIGNALED);
    }

    @Test
    void shouldCarryRemoteAddressAndRkeyForRdmaRead()
    {
        final SendRequest request = new SendRequest().opcode(WrOpcode.RDMA_READ).remoteAddress(0xABCDL).rkey(-5);
        request.setSge(0x1000L, 8, 5);

        final IbvSendWR wr = WorkRequestTranslator.newSendWr(request);

        assertThat(wr.getOpcode()).isEqualTo(IbvSendWR.IBV_WR_RDMA_READ);
        assertThat(wr.getRdma().getRemote_addr()).isEqualTo(0xABCDL);
        assertThat(wr.getRdma().getRkey()).isEqualTo(-5);
    }

    @Test
    void shouldPutTheImmediateOnTheWireInNetworkByteOrder()
    {
        // DiSNi writes imm_data through a native-order buffer; the bytes there are what ibverbs sends.
        final ByteBuffer nativeWr = ByteBuffer.allocate(4).order(ByteOrder.nativeOrder());
        nativeWr.putInt(0, WorkRequestTranslator.immToDisni(0x0A0B_0C0D));

        assertThat(nativeWr.array()).containsExactly(0x0A, 0x0B, 0x0C, 0x0D);
    }

    @Test
    void shouldSwapTheImmediateOnLittleEndianAndNotOnBigEndian()
    {
        assertThat(WorkRequestTranslator.immToDisni(0x0102_0304, ByteOrder.LITTLE_ENDIAN)).isEqualTo(0x0403_0201);
        assertThat(WorkRequestTranslator.immToDisni(0x0102_0304, ByteOrder.BIG_ENDIAN)).isEqualTo(0x0102_0304);
        for (final ByteOrder order : new ByteOrder[] {ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN})
        {
            final ByteBuffer buffer = ByteBuffer.allocate(4).order(order);
            buffer.putInt(0, WorkRequestTranslator.immToDisni(0xDEAD_BEEF, order));
            assertThat(buffer.array()).containsExactly(0xDE, 0xAD, 0xBE, 0xEF);
        }
    }

    @Test
    void shouldReadAnImmediateSentInNetworkByteOrderAsHostOrder()
    {
        // A C peer posted htonl(0x01020304): the ibv_wc holds bytes 01 02 03 04, which DiSNi reads in native order.
        final int disniValue = ByteBuffer.wrap(new byte[] {1, 2, 3, 4}).order(ByteOrder.nativeOrder()).getInt();

        assertThat(WorkRequestTranslator.immFromDisni(disniValue)).isEqualTo(0x0102_0304);
        assertThat(WorkRequestTranslator.immFromDisni(WorkRequestTranslator.immToDisni(-123_456))).isEqualTo(-123_456);
    }

    @Test
    void shouldTranslateRecvRequestWithItsScatterGatherList()
    {
        final RecvRequest request = new RecvRequest().wrId(77);
        request.setSge(0x5000L, 2048, 9);
        request.addSge(0x9000L, 512, 10);

        final IbvRecvWR wr = WorkRequestTranslator.newRecvWr(request);

        assertThat(wr.getWr_id()).isEqualTo(77);
        assertThat(wr.getNum_sge()).isEqualTo(2);
        assertSge(wr.getSg_list().get(0), 0x5000L, 2048, 9);
        assertSge(wr.getSg_list().get(1), 0x9000L, 512, 10);
    }

    @Test
    void shouldTranslateReceiveOfRdmaWriteWithImmediate()
    {
        final IbvWC wc = wc(5, WcStatus.SUCCESS.value(), 129, 0, WorkRequestTranslator.immToDisni(0x00C0_FFEE),
            WorkRequestTranslator.IBV_WC_WITH_IMM, 0x1234);
        final WorkCompletions out = new WorkCompletions(4);

        final int failed = WorkRequestTranslator.toCompletions(new IbvWC[] {wc}, 1, out, 0);

        assertThat(failed).isZero();
        assertThat(out.count()).isEqualTo(1);
        assertThat(out.wrId(0)).isEqualTo(5);
        assertThat(out.status(0)).isEqualTo(WcStatus.SUCCESS);
        assertThat(out.opcode(0)).isEqualTo(WcOpcode.RECV_RDMA_WITH_IMM);
        assertThat(out.byteLen(0)).isZero();
        assertThat(out.hasImm(0)).isTrue();
        assertThat(out.immData(0)).isEqualTo(0x00C0_FFEE);
        assertThat(out.qpNum(0)).isEqualTo(0x1234);
    }

    @Test
    void shouldTranslateSendReceiveAndWriteCompletions()
    {
        final IbvWC[] wcs = {
            wc(1, 0, 0, 64, 0, 0, 3),
            wc(2, 0, 128, 100, 0, 0, 3),
            wc(3, 0, 1, 4096, 0, 0, 3),
            wc(4, 0, 2, 512, 0, 0, 3),
            wc(5, 0, 128, 8, WorkRequestTranslator.immToDisni(7), WorkRequestTranslator.IBV_WC_WITH_IMM, 3),
        };
        final WorkCompletions out = new WorkCompletions(8);

        WorkRequestTranslator.toCompletions(wcs, wcs.length, out, 0);

        assertThat(out.count()).isEqualTo(5);
        assertThat(out.opcode(0)).isEqualTo(WcOpcode.SEND);
        assertThat(out.byteLen(0)).isEqualTo(64);
        assertThat(out.opcode(1)).isEqualTo(WcOpcode.RECV);
        assertThat(out.byteLen(1)).isEqualTo(100);
        assertThat(out.hasImm(1)).isFalse();
        assertThat(out.immData(1)).isZero();
        assertThat(out.opcode(2)).isEqualTo(WcOpcode.RDMA_WRITE);
        assertThat(out.opcode(3)).isEqualTo(WcOpcode.RDMA_READ);
        assertThat(out.opcode(4)).isEqualTo(WcOpcode.RECV);
        assertThat(out.hasImm(4)).isTrue();
        assertThat(out.immData(4)).isEqualTo(7);
        assertThat(out.wcFlags(4)).isEqualTo(WorkCompletions.WC_WITH_IMM);
    }

    @Test
    void shouldNotTrustFieldsDisniLeavesStaleForFailedCompletions()
    {
        // DiSNi's poll reads byte_len, imm_data, qp_num and wc_flags only for IBV_WC_SUCCESS: a reused IbvWC
        // keeps the previous completion's values.
        final IbvWC stale = wc(9, WcStatus.WR_FLUSH_ERR.value(), 128, 999, 12345, WorkRequestTranslator.IBV_WC_WITH_IMM, 77);
        final WorkCompletions out = new WorkCompletions(1);

        final int failed = WorkRequestTranslator.toCompletions(new IbvWC[] {stale}, 1, out, 42);

        assertThat(failed).isEqualTo(1);
        assertThat(out.wrId(0)).isEqualTo(9);
        assertThat(out.status(0)).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertThat(out.byteLen(0)).isZero();
        assertThat(out.hasImm(0)).isFalse();
        assertThat(out.immData(0)).isZero();
        assertThat(out.qpNum(0)).isEqualTo(42);
    }

    @Test
    void shouldMapEveryDisniStatusToTheSpiStatusOfTheSameName()
    {
        for (final IbvWC.IbvWcStatus status : IbvWC.IbvWcStatus.values())
        {
            assertThat(WorkRequestTranslator.toStatus(status.ordinal()).name())
                .isEqualTo(status.name().substring("IBV_WC_".length()));
        }
        assertThat(WorkRequestTranslator.toStatus(10)).isEqualTo(WcStatus.REM_ACCESS_ERR);
        assertThat(WorkRequestTranslator.toStatus(13)).isEqualTo(WcStatus.RNR_RETRY_EXC_ERR);
        assertThat(WorkRequestTranslator.toStatus(1000)).isEqualTo(WcStatus.GENERAL_ERR);
    }

    @Test
    void shouldMapEveryDisniOpcodeTheSpiKnowsToTheSameName()
    {
        int mapped = 0;
        for (final IbvWC.IbvWcOpcode opcode : IbvWC.IbvWcOpcode.values())
        {
            final String name = opcode.name().substring("IBV_WC_".length());
            final boolean known = List.of("SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "RECV_RDMA_WITH_IMM").contains(name);
            if (known)
            {
                assertThat(WorkRequestTranslator.toOpcode(opcode.getOpcode()).name()).isEqualTo(name);
                mapped++;
            }
        }
        assertThat(mapped).isEqualTo(5);
        assertThat(WorkRequestTranslator.toOpcode(3)).isEqualTo(WcOpcode.SEND);
        assertThat(WorkRequestTranslator.toOpcode(130)).isEqualTo(WcOpcode.RECV);
    }

    @Test
    void shouldMapPostFailuresToResultCodes()
    {
        assertThat(WorkRequestTranslator.postResultOf("j2c::post_send: ibv_post_send failed: Cannot allocate memory\n"))
            .isEqualTo(PostResult.QUEUE_FULL);
        assertThat(WorkRequestTranslator.postResultOf("j2c::post_recv: ibv_post_recv failed: Invalid argument\n"))
            .isEqualTo(PostResult.INVALID);
        assertThat(WorkRequestTranslator.postResultOf("Trying to post send on closed QP")).isEqualTo(PostResult.CLOSED);
        assertThat(WorkRequestTranslator.postResultOf(null)).isEqualTo(PostResult.INVALID);
    }

    private static IbvWC wc(
        final long wrId, final int status, final int opcode, final int byteLen, final int imm, final int flags, final int qpNum)
    {
        final IbvWC wc = new IbvWC();
        wc.setWr_id(wrId);
        wc.setStatus(status);
        wc.setOpcode(opcode);
        wc.setByte_len(byteLen);
        wc.setImm_data(imm);
        wc.setWc_flags(flags);
        wc.setQp_num(qpNum);
        return wc;
    }

    private static void assertSge(final IbvSge sge, final long address, final int length, final int lkey)
    {
        assertThat(sge.getAddr()).isEqualTo(address);
        assertThat(sge.getLength()).isEqualTo(length);
        assertThat(sge.getLkey()).isEqualTo(lkey);
    }
}
