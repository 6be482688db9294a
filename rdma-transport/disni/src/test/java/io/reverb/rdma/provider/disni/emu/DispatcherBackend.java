package io.reverb.rdma.provider.disni.emu;

import java.io.IOException;

/**
 * The native methods of DiSNi 2.1's {@code com.ibm.disni.verbs.impl.NativeDispatcher} (libdisni's JNI boundary),
 * as an interface: the test-scope {@code NativeDispatcher} that shadows DiSNi's forwards every call to one
 * implementation, the {@link EmulatedDispatcher emulated device} or {@link RealDispatcher libdisni itself}.
 * Arguments are libdisni's: object handles (C pointers there) and addresses of native memory that DiSNi's Java
 * classes filled with C structures ({@link VerbsLayout}).
 */
// CHECKSTYLE.OFF: MethodName (libdisni's JNI names)
public interface DispatcherBackend
{
    /**
     * Runs what DiSNi's {@code NativeDispatcher} constructor runs against this backend.
     *
     * @throws IOException as that constructor (wrong libdisni version).
     */
    void open() throws IOException;

    /** @return whether this is the emulated device (the shadow then adopts its sizes, as DiSNi would). */
    boolean emulated();

    /** libdisni's {@code _createEventChannel}. */
    long _createEventChannel() throws IOException;

    /** libdisni's {@code _createId}. */
    long _createId(final long a0, final short a1) throws IOException;

    /** libdisni's {@code _createQP}. */
    long _createQP(final long a0, final long a1, final long a2, final long a3, final int a4, final int a5, final int a6,
        final int a7) throws IOException;

    /** libdisni's {@code _bindAddr}. */
    void _bindAddr(final long a0, final long a1) throws IOException;

    /** libdisni's {@code _listen}. */
    void _listen(final long a0, final int a1) throws IOException;

    /** libdisni's {@code _resolveAddr}. */
    void _resolveAddr(final long a0, final long a1, final long a2, final int a3) throws IOException;

    /** libdisni's {@code _resolveRoute}. */
    void _resolveRoute(final long a0, final int a1) throws IOException;

    /** libdisni's {@code _getCmEvent}. */
    int _getCmEvent(final long a0, final long a1, final long a2, final int a3);

    /** libdisni's {@code _connect}. */
    void _connect(final long a0, final int a1, final int a2, final long a3, final byte a4) throws IOException;

    /** libdisni's {@code _accept}. */
    void _accept(final long a0, final int a1, final int a2) throws IOException;

    /** libdisni's {@code _ackCmEvent}. */
    int _ackCmEvent(final int a0);

    /** libdisni's {@code _disconnect}. */
    int _disconnect(final long a0);

    /** libdisni's {@code _destroyEventChannel}. */
    int _destroyEventChannel(final long a0);

    /** libdisni's {@code _destroyCmId}. */
    int _destroyCmId(final long a0);

    /** libdisni's {@code _destroyQP}. */
    int _destroyQP(final long a0);

    /** libdisni's {@code _getSrcAddr}. */
    int _getSrcAddr(final long a0, final long a1);

    /** libdisni's {@code _getDstAddr}. */
    int _getDstAddr(final long a0, final long a1);

    /** libdisni's {@code _destroyEp}. */
    int _destroyEp(final long a0);

    /** libdisni's {@code _allocPd}. */
    long _allocPd(final long a0) throws IOException;

    /** libdisni's {@code _createCompChannel}. */
    long _createCompChannel(final long a0) throws IOException;

    /** libdisni's {@code _createCQ}. */
    long _createCQ(final long a0, final long a1, final int a2, final int a3) throws IOException;

    /** libdisni's {@code _modifyQP}. */
    int _modifyQP(final long a0, final long a1) throws IOException;

    /** libdisni's {@code _regMr}. */
    long _regMr(final long a0, final long a1, final int a2, final int a3, final long a4, final long a5,
        final long a6) throws IOException;

    /** libdisni's {@code _queryOdpSupport}. */
    int _queryOdpSupport(final long a0);

    /** libdisni's {@code _expPrefetchMr}. */
    int _expPrefetchMr(final long a0, final long a1, final int a2) throws IOException;

    /** libdisni's {@code _deregMr}. */
    void _deregMr(final long a0) throws IOException;

    /** libdisni's {@code _postSend}. */
    void _postSend(final long a0, final long a1) throws IOException;

    /** libdisni's {@code _postRecv}. */
    void _postRecv(final long a0, final long a1) throws IOException;

    /** libdisni's {@code _getCqEvent}. */
    int _getCqEvent(final long a0, final int a1) throws IOException;

    /** libdisni's {@code _pollCQ}. */
    int _pollCQ(final long a0, final int a1, final long a2) throws IOException;

    /** libdisni's {@code _reqNotifyCQ}. */
    int _reqNotifyCQ(final long a0, final int a1) throws IOException;

    /** libdisni's {@code _ackCqEvent}. */
    int _ackCqEvent(final long a0, final int a1);

    /** libdisni's {@code _destroyCompChannel}. */
    int _destroyCompChannel(final long a0);

    /** libdisni's {@code _deallocPd}. */
    int _deallocPd(final long a0);

    /** libdisni's {@code _destroyCQ}. */
    int _destroyCQ(final long a0);

    /** libdisni's {@code _getContext}. */
    long _getContext(final long a0) throws IOException;

    /** libdisni's {@code _getQpNum}. */
    int _getQpNum(final long a0) throws IOException;

    /** libdisni's {@code _getContextFd}. */
    int _getContextFd(final long a0) throws IOException;

    /** libdisni's {@code _getContextNumCompVectors}. */
    int _getContextNumCompVectors(final long a0) throws IOException;

    /** libdisni's {@code _getPdHandle}. */
    int _getPdHandle(final long a0) throws IOException;

    /** libdisni's {@code _getSockAddrInSize}. */
    int _getSockAddrInSize();

    /** libdisni's {@code _getIbvRecvWRSize}. */
    int _getIbvRecvWRSize();

    /** libdisni's {@code _getIbvSendWRSize}. */
    int _getIbvSendWRSize();

    /** libdisni's {@code _getIbvSgeSize}. */
    int _getIbvSgeSize();

    /** libdisni's {@code _getIbvWCSize}. */
    int _getIbvWCSize();

    /** libdisni's {@code _getRemoteAddressOffset}. */
    int _getRemoteAddressOffset();

    /** libdisni's {@code _getRKeyOffset}. */
    int _getRKeyOffset();

    /** libdisni's {@code _getVersion}. */
    int _getVersion();
}
// CHECKSTYLE.ON: MethodName
