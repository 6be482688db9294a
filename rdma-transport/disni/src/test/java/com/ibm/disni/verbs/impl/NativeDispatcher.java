// CHECKSTYLE.OFF: PackageName (must shadow DiSNi's class of this name)
package com.ibm.disni.verbs.impl;
// CHECKSTYLE.ON: PackageName

import com.ibm.disni.verbs.IbvWC;
import io.reverb.rdma.provider.disni.emu.DispatcherBackend;
import io.reverb.rdma.provider.disni.emu.DispatcherBackends;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TEST SCOPE ONLY: shadows DiSNi 2.1's {@code NativeDispatcher} (libdisni's JNI boundary). Surefire puts
 * {@code target/test-classes} before the DiSNi jar, so DiSNi's real Java classes ({@code RdmaCmNat},
 * {@code RdmaVerbsNat}, {@code Nat*Call}) call this class. It forwards every call to the backend chosen once per
 * JVM by {@link DispatcherBackends#select()}: the emulated RDMA device when the system property
 * {@value DispatcherBackends#EMULATED_PROP} is true, otherwise the real libdisni (DiSNi's own
 * {@code NativeDispatcher}, loaded from the DiSNi jar in a class loader of its own), so that on a host with an
 * RDMA device the tests still run against the hardware.
 */
public class NativeDispatcher
{
    private static final Logger LOG = LoggerFactory.getLogger(NativeDispatcher.class);
    private static final DispatcherBackend BACKEND = DispatcherBackends.select();

    NativeDispatcher() throws IOException
    {
        BACKEND.open();
        if (BACKEND.emulated())
        {
            adoptNativeSizes();
        }
    }

    /** What DiSNi's constructor does with libdisni's answers: adopt every native size that differs. */
    private void adoptNativeSizes()
    {
        if (_getSockAddrInSize() != SockAddrIn.CSIZE)
        {
            LOG.info("sock_addr_in size mismatch, jverbs size {}, native size {}", SockAddrIn.CSIZE, _getSockAddrInSize());
            SockAddrIn.CSIZE = _getSockAddrInSize();
        }
        if (_getIbvRecvWRSize() != NatIbvRecvWR.CSIZE)
        {
            LOG.info("IbvRecvWR size mismatch, jverbs size {}, native size {}", NatIbvRecvWR.CSIZE, _getIbvRecvWRSize());
            NatIbvRecvWR.CSIZE = _getIbvRecvWRSize();
        }
        if (_getIbvSendWRSize() != NatIbvSendWR.CSIZE)
        {
            LOG.info("IbvSendWR size mismatch, jverbs size {}, native size {}", NatIbvSendWR.CSIZE, _getIbvSendWRSize());
            NatIbvSendWR.CSIZE = _getIbvSendWRSize();
        }
        if (_getIbvWCSize() != IbvWC.CSIZE)
        {
            LOG.info("IbvWC size mismatch, jverbs size {}, native size {}", IbvWC.CSIZE, _getIbvWCSize());
            IbvWC.CSIZE = _getIbvWCSize();
        }
        if (_getIbvSgeSize() != NatIbvSge.CSIZE)
        {
            LOG.info("IbvSge size mismatch, jverbs size {}, native size {}", NatIbvSge.CSIZE, _getIbvSgeSize());
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

    // CHECKSTYLE.OFF: MethodName (libdisni's JNI names)
    /** Forwards to the backend (libdisni's {@code _createEventChannel}). */
    public long _createEventChannel() throws IOException
    {
        return BACKEND._createEventChannel();
    }

    /** Forwards to the backend (libdisni's {@code _createId}). */
    public long _createId(final long a0, final short a1) throws IOException
    {
        return BACKEND._createId(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _createQP}). */
    public long _createQP(final long a0, final long a1, final long a2, final long a3, final int a4, final int a5,
        final int a6, final int a7) throws IOException
    {
        return BACKEND._createQP(a0, a1, a2, a3, a4, a5, a6, a7);
    }

    /** Forwards to the backend (libdisni's {@code _bindAddr}). */
    public void _bindAddr(final long a0, final long a1) throws IOException
    {
        BACKEND._bindAddr(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _listen}). */
    public void _listen(final long a0, final int a1) throws IOException
    {
        BACKEND._listen(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _resolveAddr}). */
    public void _resolveAddr(final long a0, final long a1, final long a2, final int a3) throws IOException
    {
        BACKEND._resolveAddr(a0, a1, a2, a3);
    }

    /** Forwards to the backend (libdisni's {@code _resolveRoute}). */
    public void _resolveRoute(final long a0, final int a1) throws IOException
    {
        BACKEND._resolveRoute(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _getCmEvent}). */
    public int _getCmEvent(final long a0, final long a1, final long a2, final int a3)
    {
        return BACKEND._getCmEvent(a0, a1, a2, a3);
    }

    /** Forwards to the backend (libdisni's {@code _connect}). */
    public void _connect(final long a0, final int a1, final int a2, final long a3, final byte a4) throws IOException
    {
        BACKEND._connect(a0, a1, a2, a3, a4);
    }

    /** Forwards to the backend (libdisni's {@code _accept}). */
    public void _accept(final long a0, final int a1, final int a2) throws IOException
    {
        BACKEND._accept(a0, a1, a2);
    }

    /** Forwards to the backend (libdisni's {@code _ackCmEvent}). */
    public int _ackCmEvent(final int a0)
    {
        return BACKEND._ackCmEvent(a0);
    }

    /** Forwards to the backend (libdisni's {@code _disconnect}). */
    public int _disconnect(final long a0)
    {
        return BACKEND._disconnect(a0);
    }

    /** Forwards to the backend (libdisni's {@code _destroyEventChannel}). */
    public int _destroyEventChannel(final long a0)
    {
        return BACKEND._destroyEventChannel(a0);
    }

    /** Forwards to the backend (libdisni's {@code _destroyCmId}). */
    public int _destroyCmId(final long a0)
    {
        return BACKEND._destroyCmId(a0);
    }

    /** Forwards to the backend (libdisni's {@code _destroyQP}). */
    public int _destroyQP(final long a0)
    {
        return BACKEND._destroyQP(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getSrcAddr}). */
    public int _getSrcAddr(final long a0, final long a1)
    {
        return BACKEND._getSrcAddr(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _getDstAddr}). */
    public int _getDstAddr(final long a0, final long a1)
    {
        return BACKEND._getDstAddr(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _destroyEp}). */
    public int _destroyEp(final long a0)
    {
        return BACKEND._destroyEp(a0);
    }

    /** Forwards to the backend (libdisni's {@code _allocPd}). */
    public long _allocPd(final long a0) throws IOException
    {
        return BACKEND._allocPd(a0);
    }

    /** Forwards to the backend (libdisni's {@code _createCompChannel}). */
    public long _createCompChannel(final long a0) throws IOException
    {
        return BACKEND._createCompChannel(a0);
    }

    /** Forwards to the backend (libdisni's {@code _createCQ}). */
    public long _createCQ(final long a0, final long a1, final int a2, final int a3) throws IOException
    {
        return BACKEND._createCQ(a0, a1, a2, a3);
    }

    /** Forwards to the backend (libdisni's {@code _modifyQP}). */
    public int _modifyQP(final long a0, final long a1) throws IOException
    {
        return BACKEND._modifyQP(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _regMr}). */
    public long _regMr(final long a0, final long a1, final int a2, final int a3, final long a4, final long a5,
        final long a6) throws IOException
    {
        return BACKEND._regMr(a0, a1, a2, a3, a4, a5, a6);
    }

    /** Forwards to the backend (libdisni's {@code _queryOdpSupport}). */
    public int _queryOdpSupport(final long a0)
    {
        return BACKEND._queryOdpSupport(a0);
    }

    /** Forwards to the backend (libdisni's {@code _expPrefetchMr}). */
    public int _expPrefetchMr(final long a0, final long a1, final int a2) throws IOException
    {
        return BACKEND._expPrefetchMr(a0, a1, a2);
    }

    /** Forwards to the backend (libdisni's {@code _deregMr}). */
    public void _deregMr(final long a0) throws IOException
    {
        BACKEND._deregMr(a0);
    }

    /** Forwards to the backend (libdisni's {@code _postSend}). */
    public void _postSend(final long a0, final long a1) throws IOException
    {
        BACKEND._postSend(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _postRecv}). */
    public void _postRecv(final long a0, final long a1) throws IOException
    {
        BACKEND._postRecv(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _getCqEvent}). */
    public int _getCqEvent(final long a0, final int a1) throws IOException
    {
        return BACKEND._getCqEvent(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _pollCQ}). */
    public int _pollCQ(final long a0, final int a1, final long a2) throws IOException
    {
        return BACKEND._pollCQ(a0, a1, a2);
    }

    /** Forwards to the backend (libdisni's {@code _reqNotifyCQ}). */
    public int _reqNotifyCQ(final long a0, final int a1) throws IOException
    {
        return BACKEND._reqNotifyCQ(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _ackCqEvent}). */
    public int _ackCqEvent(final long a0, final int a1)
    {
        return BACKEND._ackCqEvent(a0, a1);
    }

    /** Forwards to the backend (libdisni's {@code _destroyCompChannel}). */
    public int _destroyCompChannel(final long a0)
    {
        return BACKEND._destroyCompChannel(a0);
    }

    /** Forwards to the backend (libdisni's {@code _deallocPd}). */
    public int _deallocPd(final long a0)
    {
        return BACKEND._deallocPd(a0);
    }

    /** Forwards to the backend (libdisni's {@code _destroyCQ}). */
    public int _destroyCQ(final long a0)
    {
        return BACKEND._destroyCQ(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getContext}). */
    public long _getContext(final long a0) throws IOException
    {
        return BACKEND._getContext(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getQpNum}). */
    public int _getQpNum(final long a0) throws IOException
    {
        return BACKEND._getQpNum(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getContextFd}). */
    public int _getContextFd(final long a0) throws IOException
    {
        return BACKEND._getContextFd(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getContextNumCompVectors}). */
    public int _getContextNumCompVectors(final long a0) throws IOException
    {
        return BACKEND._getContextNumCompVectors(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getPdHandle}). */
    public int _getPdHandle(final long a0) throws IOException
    {
        return BACKEND._getPdHandle(a0);
    }

    /** Forwards to the backend (libdisni's {@code _getSockAddrInSize}). */
    public int _getSockAddrInSize()
    {
        return BACKEND._getSockAddrInSize();
    }

    /** Forwards to the backend (libdisni's {@code _getIbvRecvWRSize}). */
    public int _getIbvRecvWRSize()
    {
        return BACKEND._getIbvRecvWRSize();
    }

    /** Forwards to the backend (libdisni's {@code _getIbvSendWRSize}). */
    public int _getIbvSendWRSize()
    {
        return BACKEND._getIbvSendWRSize();
    }

    /** Forwards to the backend (libdisni's {@code _getIbvSgeSize}). */
    public int _getIbvSgeSize()
    {
        return BACKEND._getIbvSgeSize();
    }

    /** Forwards to the backend (libdisni's {@code _getIbvWCSize}). */
    public int _getIbvWCSize()
    {
        return BACKEND._getIbvWCSize();
    }

    /** Forwards to the backend (libdisni's {@code _getRemoteAddressOffset}). */
    public int _getRemoteAddressOffset()
    {
        return BACKEND._getRemoteAddressOffset();
    }

    /** Forwards to the backend (libdisni's {@code _getRKeyOffset}). */
    public int _getRKeyOffset()
    {
        return BACKEND._getRKeyOffset();
    }

    /** Forwards to the backend (libdisni's {@code _getVersion}). */
    public int _getVersion()
    {
        return BACKEND._getVersion();
    }
    // CHECKSTYLE.ON: MethodName
}
