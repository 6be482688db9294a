package io.reverb.rdma.provider.disni.emu;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;

/** The emulated device's objects (package-private, one handle each in {@link EmulatedFabric}). */
final class EmuObjects
{
    private EmuObjects()
    {
    }

    /** An object with a handle (libdisni's C pointer). */
    abstract static class Handled
    {
        final long handle;
        boolean destroyed;

        Handled(final long handle)
        {
            this.handle = handle;
        }
    }

    /** An RDMA device with one IPv4 address ({@code ibv_context}). */
    static final class Device extends Handled
    {
        final int ip;
        final String name;
        final int fd;
        /** Memory regions by key (lkey == rkey, as on mlx5). */
        final Map<Integer, Mr> mrs = new HashMap<>();

        Device(final long handle, final int ip, final String name, final int fd)
        {
            super(handle);
            this.ip = ip;
            this.name = name;
            this.fd = fd;
        }
    }

    /** A protection domain. */
    static final class Pd extends Handled
    {
        final Device device;
        final int pdHandle;
        int mrs;
        int qps;

        Pd(final long handle, final Device device, final int pdHandle)
        {
            super(handle);
            this.device = device;
            this.pdHandle = pdHandle;
        }
    }

    /** A registered memory region: the address range DMA may touch with its keys. */
    static final class Mr extends Handled
    {
        final Pd pd;
        final long address;
        final long length;
        final int access;
        final int key;

        Mr(final long handle, final Pd pd, final long address, final long length, final int access, final int key)
        {
            super(handle);
            this.pd = pd;
            this.address = address;
            this.length = length;
            this.access = access;
            this.key = key;
        }

        boolean contains(final long addr, final long len)
        {
            return len >= 0 && addr >= address && addr + len <= address + length && addr + len >= addr;
        }
    }

    /** A completion channel: the CQs whose armed notification fired, in order. */
    static final class CompChannel extends Handled
    {
        final Device device;
        final LinkedBlockingQueue<Cq> events = new LinkedBlockingQueue<>();
        int cqs;

        CompChannel(final long handle, final Device device)
        {
            super(handle);
            this.device = device;
        }
    }

    /**
     * One work completion ({@code struct ibv_wc}) and what polling it gives back to its queue. {@link #receive}
     * and {@link #status} decide which fields polling writes: mlx5 writes only some per kind and leaves the rest of
     * the caller's {@code ibv_wc} as the previous poll left it.
     */
    static final class Wc
    {
        final long wrId;
        final int status;
        final int opcode;
        final int byteLen;
        final int imm;
        final int flags;
        final int qpNum;
        final int srcQp;
        final boolean solicited;
        /** The QP whose send-queue slots ({@link #sqRetire}) or receive slot ({@link #rqRetire}) polling frees. */
        final Qp qp;
        final int sqRetire;
        final boolean rqRetire;

        Wc(final long wrId, final int status, final int opcode, final int byteLen, final int imm, final int flags,
            final Qp qp, final int srcQp, final boolean solicited, final int sqRetire, final boolean rqRetire)
        {
            this.wrId = wrId;
            this.status = status;
            this.opcode = opcode;
            this.byteLen = byteLen;
            this.imm = imm;
            this.flags = flags;
            this.qpNum = qp.qpn;
            this.srcQp = srcQp;
            this.solicited = solicited;
            this.qp = qp;
            this.sqRetire = sqRetire;
            this.rqRetire = rqRetire;
        }
    }

    /** A completion queue. Its entries are guarded by the CQ itself (pollers do not take the fabric lock). */
    static final class Cq extends Handled
    {
        final Device device;
        final CompChannel channel;
        final int capacity;
        final ArrayDeque<Wc> entries = new ArrayDeque<>();
        final List<Qp> qps = new ArrayList<>();
        boolean armed;
        boolean solicitedOnly;
        boolean overflowed;
        int unackedEvents;

        Cq(final long handle, final Device device, final CompChannel channel, final int capacity)
        {
            super(handle);
            this.device = device;
            this.channel = channel;
            this.capacity = capacity;
        }
    }

    /** An rdma_cm event channel. */
    static final class EventChannel extends Handled
    {
        final LinkedBlockingQueue<long[]> events = new LinkedBlockingQueue<>();
        int ids;
        /** Events on their way (delivered in this order): {id, listen id, event}. */
        final ArrayDeque<Object[]> pending = new ArrayDeque<>();

        EventChannel(final long handle)
        {
            super(handle);
        }
    }

    /** rdma_cm id states (a subset of the kernel's). */
    enum CmState
    {
        IDLE, BOUND, ADDR_RESOLVED, ROUTE_RESOLVED, LISTEN, REQ_RECEIVED,
        /** Passive side: rdma_accept sent the REP (its QP is RTS); ESTABLISHED comes with the active side's RTU. */
        REP_SENT,
        /** Active side: REQ sent; the REP (if any) waits in its channel until its own event loop retrieves it. */
        CONNECTING,
        CONNECTED, DISCONNECTED
    }

    /** An rdma_cm id. */
    static final class CmId extends Handled
    {
        final EventChannel channel;
        CmState state = CmState.IDLE;
        Device device;
        int ip;
        int port;
        boolean bound;
        int dstIp;
        int dstPort;
        int backlog;
        CmId listener;
        CmId peer;
        Qp qp;
        int rnrRetry;
        int retry;
        byte[] privateData = new byte[0];
        /**
         * Fault injection: the id's host died without a word (kill -9 with the DREQ lost, a power cut): its QP neither
         * answers nor sends, and its CM neither sends nor answers a DREQ.
         */
        boolean vanished;

        CmId(final long handle, final EventChannel channel)
        {
            super(handle);
            this.channel = channel;
        }
    }

    /** RC queue pair states. */
    enum QpState
    {
        RESET, INIT, RTR, RTS, ERROR
    }

    /** A posted receive: its scatter list. */
    static final class RecvWr
    {
        final long wrId;
        final long[] addrs;
        final int[] lengths;
        final int[] lkeys;

        RecvWr(final long wrId, final long[] addrs, final int[] lengths, final int[] lkeys)
        {
            this.wrId = wrId;
            this.addrs = addrs;
            this.lengths = lengths;
            this.lkeys = lkeys;
        }

        long capacity()
        {
            long total = 0;
            for (final int length : lengths)
            {
                total += Integer.toUnsignedLong(length);
            }
            return total;
        }
    }

    /** A posted send work request, as read from its {@code ibv_send_wr} at post time. */
    static final class SendWr
    {
        final long wrId;
        final int opcode;
        final int flags;
        final int imm;
        final long remoteAddr;
        final int rkey;
        final long[] addrs;
        final int[] lengths;
        final int[] lkeys;
        /** Native copy of inline data (freed after execution), or 0. */
        long inlineCopy;

        SendWr(final long wrId, final int opcode, final int flags, final int imm, final long remoteAddr, final int rkey,
            final long[] addrs, final int[] lengths, final int[] lkeys)
        {
            this.wrId = wrId;
            this.opcode = opcode;
            this.flags = flags;
            this.imm = imm;
            this.remoteAddr = remoteAddr;
            this.rkey = rkey;
            this.addrs = addrs;
            this.lengths = lengths;
            this.lkeys = lkeys;
        }

        long length()
        {
            long total = 0;
            for (final int length : lengths)
            {
                total += Integer.toUnsignedLong(length);
            }
            return total;
        }

        boolean signaled()
        {
            return (flags & VerbsLayout.SEND_SIGNALED) != 0;
        }
    }

    /** An RC queue pair; its data path is in {@link QpEngine}. */
    static final class Qp extends Handled
    {
        final int qpn;
        final CmId id;
        final Pd pd;
        final Cq sendCq;
        final Cq recvCq;
        final int maxSendWr;
        final int maxRecvWr;
        final int maxInline;
        QpState state = QpState.INIT;
        Qp remote;
        int rnrRetry;
        /** Transport retry count (rdma_connect's retry_count, carried in the REQ to both sides). */
        int retry = 7;
        final ArrayDeque<RecvWr> recvQueue = new ArrayDeque<>();
        /** Posted send requests not yet executed, in order; the head may wait on an RNR or retry timer. */
        final ArrayDeque<SendWr> sendQueue = new ArrayDeque<>();
        /** Executed send requests whose ACK (their requester completion) has not come back yet, in order. */
        final ArrayDeque<SendWr> unacked = new ArrayDeque<>();
        /** A doorbell (execution task) is scheduled on the NIC. */
        boolean doorbell;
        /** The head of the send queue waits on a timer; a change of token cancels it. */
        Object waiting;
        /** RNR retries and transport retries spent on the head of the send queue. */
        int rnrSpent;
        int retrySpent;
        /** Send-queue slots in use: posted and not yet freed by polling a completion that retires them. */
        int sqUsed;
        /** Executed WRs since the last send-queue completion (an unsignaled WR is retired by the next CQE). */
        int unretired;
        int rqUsed;

        Qp(final long handle, final int qpn, final CmId id, final Pd pd, final Cq sendCq, final Cq recvCq,
            final int maxSendWr, final int maxRecvWr, final int maxInline)
        {
            super(handle);
            this.qpn = qpn;
            this.id = id;
            this.pd = pd;
            this.sendCq = sendCq;
            this.recvCq = recvCq;
            this.maxSendWr = maxSendWr;
            this.maxRecvWr = maxRecvWr;
            this.maxInline = maxInline;
        }
    }
}
