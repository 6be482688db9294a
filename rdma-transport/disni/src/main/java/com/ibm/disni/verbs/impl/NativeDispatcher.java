// CHECKSTYLE.OFF: PackageName (replaces DiSNi's class of this name)
package com.ibm.disni.verbs.impl;
// CHECKSTYLE.ON: PackageName

import com.ibm.disni.util.DiSNILogger;
import com.ibm.disni.verbs.IbvWC;
import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import java.io.IOException;
import org.slf4j.Logger;

/**
 * DiSNi 2.1's JNI boundary, in place of the class of the same name in {@code com.ibm.disni:disni:2.1}: the same
 * members (the 48 native methods, the constructor's JNI version check and adoption of the native struct sizes),
 * but its static initialiser loads the native half Reverb ships in this jar ({@code src/main/c},
 * {@code libreverb-disni.so}) unless a {@code libdisni.so} is on {@code java.library.path} (see
 * {@link NativeLibrary}), instead of {@code System.loadLibrary("disni")}, which needed a libdisni built by hand.
 *
 * <p>It must come before the DiSNi jar on the class path, as Maven and Gradle order a dependency before its own
 * dependencies; {@code DisniAvailability} reports it when DiSNi's class wins and no libdisni is there for it.
 * {@code NativeDispatcherContractTest} holds its members and the library's exports against DiSNi's class.
 */
public class NativeDispatcher
{
    // CHECKSTYLE.OFF: ConstantName|StaticVariableName|MemberName|MethodName (DiSNi's names, kept)
    private static final Logger logger = DiSNILogger.getLogger();
    private static int JVERBS_VERSION = 32;

    static
    {
        // System.load binds the library to the loader of its caller, which must be this class.
        final String library = NativeLibrary.locate();
        try
        {
            System.load(library);
        }
        finally
        {
            NativeLibrary.loaded(library);
        }
    }

    NativeDispatcher() throws IOException
    {
        logger.info("jverbs jni version " + _getVersion());
        if (_getVersion() != JVERBS_VERSION)
        {
            throw new IOException("jverbs outdated, version found " + _getVersion() + ", version required " +
                JVERBS_VERSION);
        }
        // As DiSNi's constructor: the native sizes win (DiSNi 2.1's Java defaults predate rdma-core's).
        if (_getSockAddrInSize() != SockAddrIn.CSIZE)
        {
            logger.debug("sock_addr_in size mismatch, jverbs size " + SockAddrIn.CSIZE + ", native size " +
                _getSockAddrInSize());
            SockAddrIn.CSIZE = _getSockAddrInSize();
        }
        if (_getIbvRecvWRSize() != NatIbvRecvWR.CSIZE)
        {
            logger.debug("IbvRecvWR size mismatch, jverbs size " + NatIbvRecvWR.CSIZE + ", native size " +
                _getIbvRecvWRSize());
            NatIbvRecvWR.CSIZE = _getIbvRecvWRSize();
        }
        if (_getIbvSendWRSize() != NatIbvSendWR.CSIZE)
        {
            logger.debug("IbvSendWR size mismatch, jverbs size " + NatIbvSendWR.CSIZE + ", native size " +
                _getIbvSendWRSize());
            NatIbvSendWR.CSIZE = _getIbvSendWRSize();
        }
        if (_getIbvWCSize() != IbvWC.CSIZE)
        {
            logger.debug("IbvWC size mismatch, jverbs size " + IbvWC.CSIZE + ", native size " + _getIbvWCSize());
            IbvWC.CSIZE = _getIbvWCSize();
        }
        if (_getIbvSgeSize() != NatIbvSge.CSIZE)
        {
            logger.debug("IbvSge size mismatch, jverbs size " + NatIbvSge.CSIZE + ", native size " + _getIbvSgeSize());
            NatIbvSge.CSIZE = _getIbvSgeSize();
        }
        if (_getRemoteAddressOffset() != NatIbvSendWR.REMOTEADDR_OFFSET)
        {
            NatIbvSendWR.REMOTEADDR_OFFSET = _getRemoteAddressOffset();
        }
        if (_getRKeyOffset() != NatIbvSendWR.RKEY_OFFSET)
        {
            NatIbvSendWR.RKEY_OFFSET = _getRKeyOffset();
        }
    }

    /** rdma_create_event_channel. */
    public native long _createEventChannel() throws IOException;

    /** rdma_create_id on a channel with a port space. */
    public native long _createId(long channel, short portSpace) throws IOException;

    /** rdma_create_qp on an id: returns the ibv_qp. */
    public native long _createQP(long id, long pd, long sendCq, long recvCq, int qpType, int maxSendWr,
        int maxRecvWr, int maxInline) throws IOException;

    /** rdma_bind_addr to a sockaddr_in. */
    public native void _bindAddr(long id, long address) throws IOException;

    /** rdma_listen. */
    public native void _listen(long id, int backlog) throws IOException;

    /** rdma_resolve_addr (source may be 0). */
    public native void _resolveAddr(long id, long source, long destination, int timeoutMs) throws IOException;

    /** rdma_resolve_route. */
    public native void _resolveRoute(long id, int timeoutMs) throws IOException;

    /** Waits for, takes and acknowledges an rdma_cm event: its type, or -1 on timeout or error. */
    public native int _getCmEvent(long channel, long listenIdOut, long idOut, int timeoutMs);

    /** rdma_connect with private data. */
    public native void _connect(long id, int retry, int rnrRetry, long privateData, byte privateLength)
        throws IOException;

    /** rdma_accept. */
    public native void _accept(long id, int retry, int rnrRetry) throws IOException;

    /** Nothing: events are acknowledged by {@link #_getCmEvent}. */
    public native int _ackCmEvent(int event);

    /** rdma_disconnect. */
    public native int _disconnect(long id);

    /** rdma_destroy_event_channel. */
    public native int _destroyEventChannel(long channel);

    /** rdma_destroy_id. */
    public native int _destroyCmId(long id);

    /** rdma_destroy_qp. */
    public native int _destroyQP(long id);

    /** Copies the id's local sockaddr_in. */
    public native int _getSrcAddr(long id, long address);

    /** Copies the id's peer sockaddr_in. */
    public native int _getDstAddr(long id, long address);

    /** rdma_destroy_ep. */
    public native int _destroyEp(long id);

    /** ibv_alloc_pd. */
    public native long _allocPd(long context) throws IOException;

    /** ibv_create_comp_channel. */
    public native long _createCompChannel(long context) throws IOException;

    /** ibv_create_cq. */
    public native long _createCQ(long context, long channel, int ncqe, int compVector) throws IOException;

    /** Refused: DiSNi 2.1 passes no attribute mask. */
    public native int _modifyQP(long qp, long attr) throws IOException;

    /** ibv_reg_mr, writing lkey, rkey and handle to the out-params. */
    public native long _regMr(long pd, long address, int length, int access, long lkeyOut, long rkeyOut,
        long handleOut) throws IOException;

    /** The device's RC ODP capabilities, or -1. */
    public native int _queryOdpSupport(long context);

    /** Prefetches an ODP range: 0 or -1. */
    public native int _expPrefetchMr(long mr, long address, int length) throws IOException;

    /** ibv_dereg_mr. */
    public native void _deregMr(long mr) throws IOException;

    /** ibv_post_send of an ibv_send_wr chain. */
    public native void _postSend(long qp, long wrList) throws IOException;

    /** ibv_post_recv of an ibv_recv_wr chain. */
    public native void _postRecv(long qp, long wrList) throws IOException;

    /** Waits for and takes a completion channel's event: 0, or -1 on timeout. */
    public native int _getCqEvent(long channel, int timeoutMs) throws IOException;

    /** ibv_poll_cq into an ibv_wc array. */
    public native int _pollCQ(long cq, int entries, long wcList) throws IOException;

    /** ibv_req_notify_cq. */
    public native int _reqNotifyCQ(long cq, int solicitedOnly) throws IOException;

    /** ibv_ack_cq_events. */
    public native int _ackCqEvent(long cq, int events);

    /** ibv_destroy_comp_channel. */
    public native int _destroyCompChannel(long channel);

    /** ibv_dealloc_pd. */
    public native int _deallocPd(long pd);

    /** ibv_destroy_cq. */
    public native int _destroyCQ(long cq);

    /** The id's ibv_context, or -1 before it has a device. */
    public native long _getContext(long id) throws IOException;

    /** The QP's number. */
    public native int _getQpNum(long qp) throws IOException;

    /** The context's command fd. */
    public native int _getContextFd(long context) throws IOException;

    /** The context's number of completion vectors. */
    public native int _getContextNumCompVectors(long context) throws IOException;

    /** The PD's kernel handle. */
    public native int _getPdHandle(long pd) throws IOException;

    /** sizeof(struct sockaddr_in). */
    public native int _getSockAddrInSize();

    /** sizeof(struct ibv_recv_wr). */
    public native int _getIbvRecvWRSize();

    /** sizeof(struct ibv_send_wr). */
    public native int _getIbvSendWRSize();

    /** sizeof(struct ibv_sge). */
    public native int _getIbvSgeSize();

    /** sizeof(struct ibv_wc). */
    public native int _getIbvWCSize();

    /** offsetof(struct ibv_send_wr, wr.rdma.remote_addr). */
    public native int _getRemoteAddressOffset();

    /** offsetof(struct ibv_send_wr, wr.rdma.rkey). */
    public native int _getRKeyOffset();

    /** The JNI version (32, DiSNi 2.1's). */
    public native int _getVersion();
    // CHECKSTYLE.ON: ConstantName|StaticVariableName|MemberName|MethodName
}
