package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaConnParam;
import com.ibm.disni.verbs.RdmaEventChannel;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * DiSNi's {@code RdmaCm} without libdisni, for tests: every call is recorded; {@code destroyCmId} runs a hook
 * (what the native side would do meanwhile); the rest are not expected and throw.
 */
final class ScriptedCm extends RdmaCm
{
    final List<String> calls = new ArrayList<>();
    Consumer<RdmaCmId> onDestroy = id -> { };

    /**
     * @param id an id (e.g. allocated without its constructor).
     * @return the id, now calling this object for its rdma_cm verbs.
     */
    <T extends RdmaCmId> T attach(final T id) throws ReflectiveOperationException
    {
        final Field field = RdmaCmId.class.getDeclaredField("cm");
        field.setAccessible(true);
        field.set(id, this);
        return id;
    }

    @Override
    public synchronized int destroyCmId(final RdmaCmId id)
    {
        calls.add("destroyCmId");
        onDestroy.accept(id);
        return 0;
    }

    private static IOException unexpected(final String call)
    {
        return new IOException("ScriptedCm: unexpected call " + call);
    }

    @Override
    public RdmaEventChannel createEventChannel() throws IOException
    {
        throw unexpected("createEventChannel");
    }

    @Override
    public RdmaCmId createId(final RdmaEventChannel channel, final short ps) throws IOException
    {
        throw unexpected("createId");
    }

    @Override
    public IbvQP createQP(final RdmaCmId id, final IbvPd pd, final IbvQPInitAttr attr) throws IOException
    {
        throw unexpected("createQP");
    }

    @Override
    public void bindAddr(final RdmaCmId id, final SocketAddress address) throws IOException
    {
        throw unexpected("bindAddr");
    }

    @Override
    public void listen(final RdmaCmId id, final int backlog) throws IOException
    {
        throw unexpected("listen");
    }

    @Override
    public void resolveAddr(final RdmaCmId id, final SocketAddress src, final SocketAddress dst, final int timeout)
        throws IOException
    {
        throw unexpected("resolveAddr");
    }

    @Override
    public void resolveRoute(final RdmaCmId id, final int timeout) throws IOException
    {
        throw unexpected("resolveRoute");
    }

    @Override
    public RdmaCmEvent getCmEvent(final RdmaEventChannel channel, final int timeout) throws IOException
    {
        throw unexpected("getCmEvent");
    }

    @Override
    public void connect(final RdmaCmId id, final RdmaConnParam param) throws IOException
    {
        throw unexpected("connect");
    }

    @Override
    public void accept(final RdmaCmId id, final RdmaConnParam param) throws IOException
    {
        throw unexpected("accept");
    }

    @Override
    public int ackCmEvent(final RdmaCmEvent event)
    {
        return 0;
    }

    @Override
    public int disconnect(final RdmaCmId id) throws IOException
    {
        throw unexpected("disconnect");
    }

    @Override
    public int destroyEventChannel(final RdmaEventChannel channel) throws IOException
    {
        throw unexpected("destroyEventChannel");
    }

    @Override
    public int destroyQP(final RdmaCmId id) throws IOException
    {
        throw unexpected("destroyQP");
    }

    @Override
    public SocketAddress getSrcAddr(final RdmaCmId id) throws IOException
    {
        throw unexpected("getSrcAddr");
    }

    @Override
    public SocketAddress getDstAddr(final RdmaCmId id) throws IOException
    {
        throw unexpected("getDstAddr");
    }

    @Override
    public int destroyEp(final RdmaCmId id) throws IOException
    {
        throw unexpected("destroyEp");
    }
}
