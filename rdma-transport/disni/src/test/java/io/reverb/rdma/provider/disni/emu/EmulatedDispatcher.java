package io.reverb.rdma.provider.disni.emu;

import io.reverb.rdma.provider.disni.emu.EmuObjects.CmId;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Device;
import io.reverb.rdma.provider.disni.emu.EmuObjects.EventChannel;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Mr;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Pd;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Qp;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.agrona.UnsafeApi;

/**
 * libdisni 2.1's JNI functions over the {@link EmulatedFabric}: the same arguments, return values, exceptions
 * (message texts included) and native-memory writes as {@code com_ibm_disni_verbs_impl_NativeDispatcher.cpp}
 * makes over rdma-core. Object ids are handles into the fabric instead of C pointers.
 */
// CHECKSTYLE.OFF: MethodName (libdisni's JNI names)
final class EmulatedDispatcher implements DispatcherBackend
{
    private final EmulatedFabric fabric;

    EmulatedDispatcher(final EmulatedFabric fabric)
    {
        this.fabric = fabric;
    }

    @Override
    public void open()
    {
    }

    @Override
    public boolean emulated()
    {
        return true;
    }

    @Override
    public long _createEventChannel()
    {
        return fabric.createEventChannel().handle;
    }

    @Override
    public long _createId(final long channel, final short ps) throws IOException
    {
        return fabric.createId(channel).handle;
    }

    @Override
    public long _createQP(final long id, final long pd, final long sendCq, final long recvCq, final int qpType,
        final int maxSendWr, final int maxRecvWr, final int maxInline) throws IOException
    {
        return fabric.createQp(id, pd, sendCq, recvCq, qpType, maxSendWr, maxRecvWr, maxInline).handle;
    }

    @Override
    public void _bindAddr(final long id, final long address) throws IOException
    {
        fabric.bindAddr(id, address);
    }

    @Override
    public void _listen(final long id, final int backlog) throws IOException
    {
        fabric.listen(id, backlog);
    }

    @Override
    public void _resolveAddr(final long id, final long src, final long dst, final int timeout) throws IOException
    {
        fabric.resolveAddr(id, dst);
    }

    @Override
    public void _resolveRoute(final long id, final int timeout) throws IOException
    {
        fabric.resolveRoute(id);
    }

    @Override
    public int _getCmEvent(final long channel, final long listenIdOut, final long idOut, final int timeout)
    {
        final EventChannel events = fabric.find(channel, EventChannel.class);
        if (events == null)
        {
            return -1;
        }
        // librdmacm may consume an event itself (a REP whose connection went away): wait on for the next one.
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeout));
        long[] event = null;
        while (event == null)
        {
            final long[] raw;
            try
            {
                raw = timeout < 0 ? events.events.take() :
                    events.events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                return -1;
            }
            if (raw == null)
            {
                return -1;
            }
            event = fabric.retrieved(raw);
        }
        UnsafeApi.putLong(listenIdOut, event[1]);
        UnsafeApi.putLong(idOut, event[2]);
        return (int)event[0];
    }

    @Override
    public void _connect(final long id, final int retry, final int rnrRetry, final long privateData, final byte length)
        throws IOException
    {
        fabric.connect(id, retry, rnrRetry, privateData, length);
    }

    @Override
    public void _accept(final long id, final int retry, final int rnrRetry) throws IOException
    {
        fabric.accept(id, retry, rnrRetry);
    }

    @Override
    public int _ackCmEvent(final int event)
    {
        return 0;
    }

    @Override
    public int _disconnect(final long id)
    {
        try
        {
            return fabric.disconnect(id);
        }
        catch (final IOException ex)
        {
            return -1;
        }
    }

    @Override
    public int _destroyEventChannel(final long channel)
    {
        return fabric.destroyEventChannel(channel);
    }

    @Override
    public int _destroyCmId(final long id)
    {
        return fabric.destroyId(id);
    }

    @Override
    public int _destroyQP(final long id)
    {
        return fabric.destroyQp(id);
    }

    @Override
    public int _getSrcAddr(final long id, final long address)
    {
        final CmId cmId = fabric.find(id, CmId.class);
        if (cmId == null)
        {
            return -1;
        }
        synchronized (fabric.lock)
        {
            EmulatedFabric.writeSockaddr(address, cmId.ip, cmId.port);
        }
        return 0;
    }

    @Override
    public int _getDstAddr(final long id, final long address)
    {
        final CmId cmId = fabric.find(id, CmId.class);
        if (cmId == null)
        {
            return -1;
        }
        synchronized (fabric.lock)
        {
            EmulatedFabric.writeSockaddr(address, cmId.dstIp, cmId.dstPort);
        }
        return 0;
    }

    @Override
    public int _destroyEp(final long id)
    {
        fabric.destroyQp(id);
        fabric.destroyId(id);
        return 0;
    }

    @Override
    public long _allocPd(final long context) throws IOException
    {
        return fabric.allocPd(context).handle;
    }

    @Override
    public long _createCompChannel(final long context) throws IOException
    {
        return fabric.createCompChannel(context).handle;
    }

    @Override
    public long _createCQ(final long context, final long channel, final int ncqe, final int compVector) throws IOException
    {
        return fabric.createCq(context, channel, ncqe, compVector).handle;
    }

    @Override
    public int _modifyQP(final long qp, final long attr) throws IOException
    {
        // libdisni 2.1 passes an uninitialised ibv_qp_attr and mask to ibv_modify_qp: the result is undefined.
        throw new IOException("j2c::modify_qp: ibv_modify_qp failed: Invalid argument (libdisni 2.1 passes an " +
            "uninitialised attribute; the emulated device refuses it)\n");
    }

    @Override
    public long _regMr(final long pd, final long address, final int length, final int access, final long lkeyOut,
        final long rkeyOut, final long handleOut) throws IOException
    {
        final Mr mr = fabric.regMr(pd, address, length, access);
        UnsafeApi.putInt(lkeyOut, mr.key);
        UnsafeApi.putInt(rkeyOut, mr.key);
        UnsafeApi.putInt(handleOut, (int)(mr.handle >>> 6));
        return mr.handle;
    }

    @Override
    public int _queryOdpSupport(final long context)
    {
        return -1;
    }

    @Override
    public int _expPrefetchMr(final long mr, final long address, final int length)
    {
        return -1;
    }

    @Override
    public void _deregMr(final long mr) throws IOException
    {
        fabric.deregMr(mr);
    }

    @Override
    public void _postSend(final long qp, final long wrList) throws IOException
    {
        final int ret = fabric.engine.postSend(qp, wrList);
        if (ret != 0)
        {
            throw new IOException("j2c::post_send: ibv_post_send failed: " + strerror(ret) + "\n");
        }
    }

    @Override
    public void _postRecv(final long qp, final long wrList) throws IOException
    {
        final int ret = fabric.engine.postRecv(qp, wrList);
        if (ret != 0)
        {
            throw new IOException("j2c::post_recv: ibv_post_recv failed: " + strerror(ret) + "\n");
        }
    }

    @Override
    public int _getCqEvent(final long channel, final int timeout) throws IOException
    {
        return fabric.engine.getCqEvent(channel, timeout);
    }

    @Override
    public int _pollCQ(final long cq, final int ne, final long wcList) throws IOException
    {
        return fabric.engine.poll(cq, ne, wcList);
    }

    @Override
    public int _reqNotifyCQ(final long cq, final int solicited) throws IOException
    {
        return fabric.engine.reqNotify(cq, solicited != 0);
    }

    @Override
    public int _ackCqEvent(final long cq, final int events)
    {
        return fabric.engine.ackCqEvents(cq, events);
    }

    @Override
    public int _destroyCompChannel(final long channel)
    {
        return fabric.destroyCompChannel(channel);
    }

    @Override
    public int _deallocPd(final long pd)
    {
        return fabric.deallocPd(pd);
    }

    @Override
    public int _destroyCQ(final long cq)
    {
        return fabric.destroyCq(cq);
    }

    @Override
    public long _getContext(final long id) throws IOException
    {
        final CmId cmId = fabric.get(id, CmId.class, "getContext");
        synchronized (fabric.lock)
        {
            return cmId.device == null ? -1 : cmId.device.handle;
        }
    }

    @Override
    public int _getQpNum(final long qp) throws IOException
    {
        return fabric.get(qp, Qp.class, "getQpNum").qpn;
    }

    @Override
    public int _getContextFd(final long context) throws IOException
    {
        return fabric.get(context, Device.class, "getContextFd").fd;
    }

    @Override
    public int _getContextNumCompVectors(final long context) throws IOException
    {
        fabric.get(context, Device.class, "getContextNumCompVectors");
        return EmulatedFabric.NUM_COMP_VECTORS;
    }

    @Override
    public int _getPdHandle(final long pd) throws IOException
    {
        return fabric.get(pd, Pd.class, "getPdHandle").pdHandle;
    }

    @Override
    public int _getSockAddrInSize()
    {
        return VerbsLayout.SOCKADDR_IN_SIZE;
    }

    @Override
    public int _getIbvRecvWRSize()
    {
        return VerbsLayout.RECV_WR_SIZE;
    }

    @Override
    public int _getIbvSendWRSize()
    {
        return VerbsLayout.SEND_WR_SIZE;
    }

    @Override
    public int _getIbvSgeSize()
    {
        return VerbsLayout.SGE_SIZE;
    }

    @Override
    public int _getIbvWCSize()
    {
        return VerbsLayout.WC_SIZE;
    }

    @Override
    public int _getRemoteAddressOffset()
    {
        return VerbsLayout.SEND_WR_REMOTE_ADDR;
    }

    @Override
    public int _getRKeyOffset()
    {
        return VerbsLayout.SEND_WR_RKEY;
    }

    @Override
    public int _getVersion()
    {
        return VerbsLayout.JNI_VERSION;
    }

    private static String strerror(final int errno)
    {
        switch (errno)
        {
            case VerbsLayout.ENOMEM:
                return "Cannot allocate memory";
            case VerbsLayout.EINVAL:
                return "Invalid argument";
            default:
                return "errno " + errno;
        }
    }
}
// CHECKSTYLE.ON: MethodName
