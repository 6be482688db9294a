package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.nio.ByteOrder;
import java.util.LinkedList;

/**
 * Translation between the verbs SPI and DiSNi's verb objects. Pure Java: it touches only DiSNi's
 * plain data classes ({@link IbvSendWR}, {@link IbvRecvWR}, {@link IbvSge}, {@link IbvWC}), none of
 * which loads libdisni, so it is unit-tested on machines without RDMA.
 *
 * <h2>Immediate data byte order</h2>
 * ibverbs' {@code imm_data} is a {@code __be32}: the four bytes in the work request are sent as they
 * are, and a C peer reads its value with {@code ntohl}. DiSNi copies the Java {@code int} into the
 * native work request (and back out of {@code ibv_wc}) through a native-order buffer, i.e. it treats the
 * Java int as the raw {@code __be32} bits. The SPI's immediate is in host order (the value the peer's
 * {@code ntohl} returns), so we convert with {@link #immToDisni(int)} before posting and
 * {@link #immFromDisni(int)} after polling: a byte swap on little-endian hosts, nothing on big-endian
 * ones. That keeps Reverb interoperable with C ibverbs peers and across hosts of different endianness.
 */
final class WorkRequestTranslator
{
    /** ibverbs' IBV_WC_WITH_IMM. */
    static final int IBV_WC_WITH_IMM = 2;

    private static final boolean SWAP_IMM = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private WorkRequestTranslator()
    {
    }

    /**
     * @param opcode SPI opcode.
     * @return DiSNi's {@code IbvSendWR.IBV_WR_*} value.
     */
    static int toDisniOpcode(final WrOpcode opcode)
    {
        switch (opcode)
        {
            case RDMA_WRITE: return IbvSendWR.IBV_WR_RDMA_WRITE;
            case RDMA_WRITE_WITH_IMM: return IbvSendWR.IBV_WR_RDMA_WRITE_WITH_IMM;
            case SEND: return IbvSendWR.IBV_WR_SEND;
            case SEND_WITH_IMM: return IbvSendWR.IBV_WR_SEND_WITH_IMM;
            case RDMA_READ: return IbvSendWR.IBV_WR_RDMA_READ;
            default: throw new IllegalArgumentException("unsupported opcode " + opcode);
        }
    }

    /**
     * @param flags {@code SendRequest.FLAG_*} bit set.
     * @return DiSNi's {@code IbvSendWR.IBV_SEND_*} bit set.
     */
    static int toDisniSendFlags(final int flags)
    {
        return translateBits(flags, SEND_FLAGS);
    }

    /**
     * @param access {@link Access} bit set.
     * @return DiSNi's {@code IbvMr.IBV_ACCESS_*} bit set.
     */
    static int toDisniAccess(final int access)
    {
        return translateBits(access, ACCESS_FLAGS);
    }

    /** Pairs of (SPI bit, DiSNi bit). */
    private static final int[] SEND_FLAGS = {
        SendRequest.FLAG_FENCE, IbvSendWR.IBV_SEND_FENCE,
        SendRequest.FLAG_SIGNALED, IbvSendWR.IBV_SEND_SIGNALED,
        SendRequest.FLAG_SOLICITED, IbvSendWR.IBV_SEND_SOLICITED,
        SendRequest.FLAG_INLINE, IbvSendWR.IBV_SEND_INLINE,
    };
    private static final int[] ACCESS_FLAGS = {
        Access.LOCAL_WRITE, IbvMr.IBV_ACCESS_LOCAL_WRITE,
        Access.REMOTE_WRITE, IbvMr.IBV_ACCESS_REMOTE_WRITE,
        Access.REMOTE_READ, IbvMr.IBV_ACCESS_REMOTE_READ,
    };

    private static int translateBits(final int bits, final int[] pairs)
    {
        int result = 0;
        for (int i = 0; i < pairs.length; i += 2)
        {
            if ((bits & pairs[i]) != 0)
            {
                result |= pairs[i + 1];
            }
        }
        return result;
    }

    /**
     * @param hostOrder immediate as the SPI holds it.
     * @return the int to give DiSNi's {@code IbvSendWR.setImm_data}.
     */
    static int immToDisni(final int hostOrder)
    {
        return immToDisni(hostOrder, ByteOrder.nativeOrder());
    }

    /**
     * @param disniValue {@code IbvWC.getImm_data()}.
     * @return the immediate in host order.
     */
    static int immFromDisni(final int disniValue)
    {
        return immToDisni(disniValue, ByteOrder.nativeOrder());
    }

    /**
     * As {@link #immToDisni(int)} for a given native order (a byte swap is its own inverse, so this also
     * converts back).
     *
     * @param value       the immediate.
     * @param nativeOrder the order of the buffer DiSNi serializes through.
     * @return the converted immediate.
     */
    static int immToDisni(final int value, final ByteOrder nativeOrder)
    {
        return nativeOrder == ByteOrder.LITTLE_ENDIAN ? Integer.reverseBytes(value) : value;
    }

    /**
     * Builds a DiSNi send work request for {@code request} (allocates: only used when a stateful call
     * for a new request shape is prepared, never per post).
     *
     * @param request SPI request.
     * @return a new {@link IbvSendWR} with one {@link IbvSge} per SPI entry.
     */
    static IbvSendWR newSendWr(final SendRequest request)
    {
        final IbvSendWR wr = new IbvSendWR();
        final LinkedList<IbvSge> sges = toSges(request);
        wr.setSg_list(sges);
        wr.setNum_sge(sges.size());
        wr.setWr_id(request.wrId());
        wr.setOpcode(toDisniOpcode(request.opcode()));
        wr.setSend_flags(toDisniSendFlags(request.flags()));
        wr.setImm_data(request.opcode().hasImmediate() ? immToDisni(request.immData()) : 0);
        if (isRdma(request.opcode()))
        {
            wr.getRdma().setRemote_addr(request.remoteAddress());
            wr.getRdma().setRkey(request.rkey());
        }
        return wr;
    }

    /**
     * Builds a DiSNi receive work request for {@code request} (allocates; see {@link #newSendWr}).
     *
     * @param request SPI request.
     * @return a new {@link IbvRecvWR}.
     */
    static IbvRecvWR newRecvWr(final RecvRequest request)
    {
        final IbvRecvWR wr = new IbvRecvWR();
        final LinkedList<IbvSge> sges = toSges(request);
        wr.setSg_list(sges);
        wr.setNum_sge(sges.size());
        wr.setWr_id(request.wrId());
        return wr;
    }

    private static LinkedList<IbvSge> toSges(final ScatterGatherList list)
    {
        final LinkedList<IbvSge> sges = new LinkedList<>();
        for (int i = 0; i < list.sgeCount(); i++)
        {
            sges.add(toSge(list, i));
        }
        return sges;
    }

    /**
     * @param opcode SPI opcode.
     * @return true if it carries a remote address and rkey.
     */
    static boolean isRdma(final WrOpcode opcode)
    {
        return opcode == WrOpcode.RDMA_WRITE || opcode == WrOpcode.RDMA_WRITE_WITH_IMM || opcode == WrOpcode.RDMA_READ;
    }

    /**
     * @param value {@code ibv_wc_status} from DiSNi.
     * @return the SPI status (GENERAL_ERR if unknown).
     */
    static WcStatus toStatus(final int value)
    {
        return WcStatus.fromValue(value);
    }

    /**
     * @param value {@code ibv_wc_opcode} from DiSNi.
     * @return the SPI opcode; values the SPI has no name for (atomics, memory-window binds: never posted by
     *         Reverb) map to SEND below 128 and RECV from 128, the ibverbs receive bit, so a switch on the
     *         result never meets null on the poll path.
     */
    static WcOpcode toOpcode(final int value)
    {
        switch (value)
        {
            case 0: return WcOpcode.SEND;
            case 1: return WcOpcode.RDMA_WRITE;
            case 2: return WcOpcode.RDMA_READ;
            case 128: return WcOpcode.RECV;
            case 129: return WcOpcode.RECV_RDMA_WITH_IMM;
            default: return (value & 128) != 0 ? WcOpcode.RECV : WcOpcode.SEND;
        }
    }

    /**
     * Copies {@code count} DiSNi completions into the SPI flyweight. Allocation-free.
     *
     * <p>DiSNi 2.1 reads {@code byte_len}, {@code imm_data}, {@code qp_num} and {@code wc_flags} out of
     * the native {@code ibv_wc} only for successful completions; for failed ones the Java {@link IbvWC}
     * still holds whatever the previous poll left there. So failed entries report 0 for those fields
     * and {@code fallbackQpNum} as QP number (the CQ's only QP, or 0 when it serves several). The opcode
     * of a failed completion is undefined in ibverbs and is passed on as read.
     *
     * @param wcs           DiSNi's completion array, as filled by {@code SVCPollCq}.
     * @param count         entries polled.
     * @param out           SPI flyweight; its count is set to {@code count}.
     * @param fallbackQpNum QP number reported for failed entries.
     * @return the number of failed entries (non-SUCCESS status).
     */
    static int toCompletions(final IbvWC[] wcs, final int count, final WorkCompletions out, final int fallbackQpNum)
    {
        int failed = 0;
        for (int i = 0; i < count; i++)
        {
            final IbvWC wc = wcs[i];
            final WcStatus status = toStatus(wc.getStatus());
            final WcOpcode opcode = toOpcode(wc.getOpcode());
            if (status == WcStatus.SUCCESS)
            {
                final int flags = wc.getWc_flags();
                final int imm = (flags & IBV_WC_WITH_IMM) != 0 ? immFromDisni(wc.getImm_data()) : 0;
                out.set(i, wc.getWr_id(), status, opcode, wc.getByte_len(), imm, flags, wc.getQp_num());
            }
            else
            {
                failed++;
                out.set(i, wc.getWr_id(), status, opcode, 0, 0, 0, fallbackQpNum);
            }
        }
        out.count(count);
        return failed;
    }

    /**
     * Maps the IOException DiSNi throws from a failed {@code ibv_post_send}/{@code ibv_post_recv} (its
     * message ends with {@code strerror} of the return code) to a {@link PostResult} code.
     *
     * @param message the exception message (may be null).
     * @return QUEUE_FULL for ENOMEM, CLOSED for a closed QP, INVALID otherwise.
     */
    static int postResultOf(final String message)
    {
        if (message == null)
        {
            return PostResult.INVALID;
        }
        if (message.contains("Cannot allocate memory") || message.contains("ENOMEM"))
        {
            return PostResult.QUEUE_FULL;
        }
        if (message.contains("closed QP") || message.contains("queuepair null"))
        {
            return PostResult.CLOSED;
        }
        return PostResult.INVALID;
    }

    /**
     * @param list  SPI list.
     * @param index entry.
     * @return a DiSNi SGE with the same address, length and lkey.
     */
    static IbvSge toSge(final ScatterGatherList list, final int index)
    {
        final IbvSge sge = new IbvSge();
        sge.setAddr(list.sgeAddress(index));
        sge.setLength(list.sgeLength(index));
        sge.setLkey(list.sgeLkey(index));
        return sge;
    }

    /** @return true when DiSNi's immediate differs from the host-order value on this machine. */
    static boolean swapsImmediate()
    {
        return SWAP_IMM;
    }
}
