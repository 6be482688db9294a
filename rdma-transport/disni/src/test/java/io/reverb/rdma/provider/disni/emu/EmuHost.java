package io.reverb.rdma.provider.disni.emu;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaConnParam;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.RdmaCm;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;

/**
 * One emulated host for {@link EmulatedDeviceTest}, through DiSNi's public API only (the classes our provider uses):
 * an event channel, an id bound to the host's address, a PD, a send and a receive CQ on one completion channel.
 */
final class EmuHost implements AutoCloseable
{
    static final int TIMEOUT_MS = 10_000;

    final String address;
    final RdmaEventChannel channel;
    final RdmaCmId anchor;
    final IbvContext context;
    final IbvPd pd;
    final IbvCompChannel compChannel;
    final IbvCQ sendCq;
    final IbvCQ recvCq;
    final List<IbvMr> mrs = new ArrayList<>();
    RdmaCmId id;
    IbvQP qp;

    EmuHost(final String address, final int cqSize) throws IOException
    {
        this.address = address;
        channel = RdmaEventChannel.createEventChannel();
        anchor = channel.createId(RdmaCm.RDMA_PS_TCP);
        anchor.bindAddr(new InetSocketAddress(InetAddress.getByName(address), 0));
        context = anchor.getVerbs();
        assertThat(context).as("an emulated device on " + address).isNotNull();
        pd = context.allocPd();
        compChannel = context.createCompChannel();
        sendCq = context.createCQ(compChannel, cqSize, 0);
        recvCq = context.createCQ(compChannel, cqSize, 0);
    }

    /** Connects {@code client} to {@code server}, both with QPs of {@code maxWr} entries and the given RNR retry counts. */
    static void connect(final EmuHost server, final EmuHost client, final int maxWr, final int serverRnr, final int clientRnr)
        throws IOException
    {
        final RdmaCmId listener = server.channel.createId(RdmaCm.RDMA_PS_TCP);
        listener.bindAddr(new InetSocketAddress(InetAddress.getByName(server.address), 0));
        listener.listen(8);
        final InetSocketAddress target = (InetSocketAddress)listener.getSource();

        client.id = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        client.id.bindAddr(new InetSocketAddress(InetAddress.getByName(client.address), 0));
        client.id.resolveAddr(null, target, TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED);
        client.id.resolveRoute(TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED);
        client.qp = client.id.createQP(client.pd, client.initAttr(maxWr));
        final RdmaConnParam connect = new RdmaConnParam();
        connect.setRnr_retry_count((byte)clientRnr);
        client.id.connect(connect);

        final RdmaCmEvent request = server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST);
        assertThat(request.getListenIdPriv()).isSameAs(listener);
        server.id = request.getConnIdPriv();
        server.qp = server.id.createQP(server.pd, server.initAttr(maxWr));
        final RdmaConnParam accept = new RdmaConnParam();
        accept.setRnr_retry_count((byte)serverRnr);
        server.id.accept(accept);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED);
        server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED);
        listener.destroyId();
    }

    IbvQPInitAttr initAttr(final int maxWr)
    {
        final IbvQPInitAttr init = new IbvQPInitAttr();
        init.cap().setMax_send_wr(maxWr);
        init.cap().setMax_recv_wr(maxWr);
        init.cap().setMax_send_sge(4);
        init.cap().setMax_recv_sge(4);
        init.cap().setMax_inline_data(64);
        init.setQp_type(IbvQP.IBV_QPT_RC);
        init.setSend_cq(sendCq);
        init.setRecv_cq(recvCq);
        return init;
    }

    RdmaCmEvent expect(final RdmaCmEvent.EventType type) throws IOException
    {
        final RdmaCmEvent event = channel.getCmEvent(TIMEOUT_MS);
        assertThat(event).as("an rdma_cm event " + type + " on " + address).isNotNull();
        assertThat(RdmaCmEvent.EventType.values()[event.getEvent()]).isEqualTo(type);
        return event;
    }

    /** @return the next event within {@code timeoutMs}, or null. */
    RdmaCmEvent nextEvent(final int timeoutMs) throws IOException
    {
        return channel.getCmEvent(timeoutMs);
    }

    IbvMr register(final ByteBuffer buffer, final int access) throws IOException
    {
        final IbvMr mr = pd.regMr(buffer, access).execute().free().getMr();
        mrs.add(mr);
        return mr;
    }

    void deregister(final IbvMr mr) throws IOException
    {
        mrs.remove(mr);
        mr.deregMr().execute().free();
    }

    static IbvSge sge(final long address, final int length, final int lkey)
    {
        final IbvSge sge = new IbvSge();
        sge.setAddr(address);
        sge.setLength(length);
        sge.setLkey(lkey);
        return sge;
    }

    void postRecv(final long wrId, final IbvSge... sges) throws IOException
    {
        final IbvRecvWR wr = new IbvRecvWR();
        wr.setWr_id(wrId);
        final LinkedList<IbvSge> list = new LinkedList<>(List.of(sges));
        wr.setSg_list(list);
        wr.setNum_sge(list.size());
        qp.postRecv(List.of(wr), null).execute().free();
    }

    static IbvSendWR sendWr(final long wrId, final int opcode, final int flags, final IbvSge... sges)
    {
        final IbvSendWR wr = new IbvSendWR();
        wr.setWr_id(wrId);
        wr.setOpcode(opcode);
        wr.setSend_flags(flags);
        final LinkedList<IbvSge> list = new LinkedList<>(List.of(sges));
        wr.setSg_list(list);
        wr.setNum_sge(list.size());
        return wr;
    }

    void postSend(final IbvSendWR... wrs) throws IOException
    {
        qp.postSend(List.of(wrs), null).execute().free();
    }

    /** Polls {@code cq} until {@code count} completions came (or the timeout). */
    static List<IbvWC> poll(final IbvCQ cq, final int count) throws IOException, InterruptedException
    {
        final List<IbvWC> got = new ArrayList<>();
        final long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
        while (got.size() < count && System.nanoTime() - deadline < 0)
        {
            got.addAll(pollOnce(cq, count - got.size()));
            if (got.size() < count)
            {
                Thread.sleep(1);
            }
        }
        return got;
    }

    static List<IbvWC> pollOnce(final IbvCQ cq, final int max) throws IOException
    {
        final IbvWC[] wcs = new IbvWC[max];
        for (int i = 0; i < max; i++)
        {
            wcs[i] = new IbvWC();
        }
        final int n = cq.poll(wcs, max).execute().free().getPolls();
        return new ArrayList<>(List.of(wcs).subList(0, n));
    }

    @Override
    public void close() throws Exception
    {
        if (id != null)
        {
            id.disconnect();
            if (qp != null)
            {
                id.destroyQP();
            }
            id.destroyId();
        }
        for (final IbvMr mr : new ArrayList<>(mrs))
        {
            deregister(mr);
        }
        // Drain what the teardown flushed (a CQ that overflowed fails its polls: nothing to drain there).
        for (final IbvCQ cq : new IbvCQ[] {sendCq, recvCq})
        {
            try
            {
                pollOnce(cq, 64);
            }
            catch (final IOException ex)
            {
                assertThat(ex).hasMessageContaining("Polling CQ failed");
            }
        }
        sendCq.destroyCQ();
        recvCq.destroyCQ();
        compChannel.destroyCompChannel();
        pd.deallocPd();
        anchor.destroyId();
        // Events of the ids destroyed above were purged; whatever is left is not ours to read any more.
        channel.destroyEventChannel();
    }
}
