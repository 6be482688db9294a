package io.reverb.rdma.provider.disni.emu;

import static io.reverb.rdma.provider.disni.emu.EmuHost.sendWr;
import static io.reverb.rdma.provider.disni.emu.EmuHost.sge;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.ibm.disni.util.MemBuf;
import com.ibm.disni.util.MemoryUtils;
import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaConnParam;
import com.ibm.disni.verbs.SVCPostRecv;
import com.ibm.disni.verbs.SVCPostSend;
import com.ibm.disni.verbs.impl.NatIbvRecvWR;
import com.ibm.disni.verbs.impl.NatIbvSendWR;
import com.ibm.disni.verbs.impl.NatIbvSge;
import com.ibm.disni.verbs.impl.SockAddrIn;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The emulated device against the verbs and rdma_cm specifications, through DiSNi's own Java classes: two hosts
 * (127.0.0.2 serves, 127.0.0.1 connects), each with its own emulated device. Runs only where the rdma:// tests run
 * over the emulation (it tests the emulation, not a real NIC).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmulatedDeviceTest
{
    private static final int ALL = VerbsLayout.ACCESS_LOCAL_WRITE | VerbsLayout.ACCESS_REMOTE_WRITE |
        VerbsLayout.ACCESS_REMOTE_READ;
    private static final int SIGNALED = IbvSendWR.IBV_SEND_SIGNALED;

    private final List<AutoCloseable> hosts = new ArrayList<>();
    private EmuHost server;
    private EmuHost client;
    private ByteBuffer serverBuf;
    private ByteBuffer clientBuf;
    private IbvMr serverMr;
    private IbvMr clientMr;
    /** The NIC's virtual clock, for the tests of timing (null: the NIC runs on its own thread). */
    private NicClock.Manual nic;

    @BeforeEach
    void hosts() throws Exception
    {
        Assumptions.assumeTrue(RdmaTestDevice.isEmulated(), "tests the emulated device; this host runs a real one");
        server = host("127.0.0.2", 16);
        client = host("127.0.0.1", 16);
        serverBuf = ByteBuffer.allocateDirect(4096);
        clientBuf = ByteBuffer.allocateDirect(4096);
        serverMr = server.register(serverBuf, ALL);
        clientMr = client.register(clientBuf, ALL);
    }

    private EmuHost host(final String address, final int cqSize) throws IOException
    {
        final EmuHost host = new EmuHost(address, cqSize);
        hosts.add(0, host);
        return host;
    }

    @AfterEach
    void closeAndCheckNothingLeft() throws Exception
    {
        if (nic != null)
        {
            nic.close();
        }
        for (final AutoCloseable host : hosts)
        {
            host.close();
        }
        for (final Map.Entry<String, Integer> live : EmulatedFabric.instance().liveObjects().entrySet())
        {
            assertThat(live.getValue()).as("live " + live.getKey()).isZero();
        }
    }

    private void connect(final int rnrRetry) throws IOException
    {
        EmuHost.connect(server, client, 8, rnrRetry, rnrRetry);
    }

    /** Takes the NIC's time over: nothing it does happens until {@link #step} or {@link NicClock.Manual#advance}. */
    private NicClock.Manual manualNic()
    {
        nic = EmulatedFabric.instance().nic.manual();
        return nic;
    }

    /** One NIC delay passes: doorbells rung so far execute (or the ACKs of what executed come back). */
    private void step()
    {
        nic.advance(Math.max(1, EmulatedFabric.instance().engine.execDelayNanos));
    }

    private static long address(final IbvMr mr)
    {
        return mr.getAddr();
    }

    // ------------------------------------------------------------------------------------------------------------
    // Struct layouts and sizes
    // ------------------------------------------------------------------------------------------------------------

    @Test
    void shouldMakeDisniAdoptTheSizesOfRdmaCore44AndReadItsWorkRequestsAtTheRightOffsets() throws Exception
    {
        // DiSNi adopted the native sizes (its "size mismatch" warnings: 72 -> 128 and 28 -> 16).
        assertThat(NatIbvSendWR.CSIZE).isEqualTo(VerbsLayout.SEND_WR_SIZE).isEqualTo(128);
        assertThat(SockAddrIn.CSIZE).isEqualTo(VerbsLayout.SOCKADDR_IN_SIZE).isEqualTo(16);
        assertThat(NatIbvRecvWR.CSIZE).isEqualTo(VerbsLayout.RECV_WR_SIZE);
        assertThat(NatIbvSge.CSIZE).isEqualTo(VerbsLayout.SGE_SIZE);
        assertThat(IbvWC.CSIZE).isEqualTo(VerbsLayout.WC_SIZE);
        assertThat(NatIbvSendWR.REMOTEADDR_OFFSET).isEqualTo(VerbsLayout.SEND_WR_REMOTE_ADDR);
        assertThat(NatIbvSendWR.RKEY_OFFSET).isEqualTo(VerbsLayout.SEND_WR_RKEY);

        // What DiSNi's NatPostSendCall writes, read back at the offsets the emulated device reads.
        connect(7);
        final IbvSendWR first = sendWr(0x1122_3344_5566_7788L, IbvSendWR.IBV_WR_RDMA_WRITE_WITH_IMM, SIGNALED,
            sge(address(clientMr) + 8, 100, clientMr.getLkey()), sge(address(clientMr) + 200, 50, clientMr.getLkey()));
        first.setImm_data(0x0bad_cafe);
        first.getRdma().setRemote_addr(address(serverMr) + 16);
        first.getRdma().setRkey(serverMr.getRkey());
        final IbvSendWR second = sendWr(42, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 7, clientMr.getLkey()));
        final SVCPostSend call = client.qp.postSend(List.of(first, second), null);
        final Field cmdField = call.getClass().getDeclaredField("cmd");
        cmdField.setAccessible(true);
        final long cmd = ((MemBuf)cmdField.get(call)).address();
        assertThat(UnsafeApi.getLong(cmd + VerbsLayout.SEND_WR_ID)).isEqualTo(0x1122_3344_5566_7788L);
        assertThat(UnsafeApi.getLong(cmd + VerbsLayout.SEND_WR_NEXT)).isEqualTo(cmd + VerbsLayout.SEND_WR_SIZE);
        assertThat(UnsafeApi.getInt(cmd + VerbsLayout.SEND_WR_NUM_SGE)).isEqualTo(2);
        assertThat(UnsafeApi.getInt(cmd + VerbsLayout.SEND_WR_OPCODE)).isEqualTo(VerbsLayout.WR_RDMA_WRITE_WITH_IMM);
        assertThat(UnsafeApi.getInt(cmd + VerbsLayout.SEND_WR_SEND_FLAGS)).isEqualTo(VerbsLayout.SEND_SIGNALED);
        assertThat(UnsafeApi.getInt(cmd + VerbsLayout.SEND_WR_IMM_DATA)).isEqualTo(0x0bad_cafe);
        assertThat(UnsafeApi.getLong(cmd + VerbsLayout.SEND_WR_REMOTE_ADDR)).isEqualTo(address(serverMr) + 16);
        assertThat(UnsafeApi.getInt(cmd + VerbsLayout.SEND_WR_RKEY)).isEqualTo(serverMr.getRkey());
        final long sgList = UnsafeApi.getLong(cmd + VerbsLayout.SEND_WR_SG_LIST);
        assertThat(sgList).isEqualTo(cmd + 2L * VerbsLayout.SEND_WR_SIZE);
        assertThat(UnsafeApi.getLong(sgList + VerbsLayout.SGE_SIZE + VerbsLayout.SGE_ADDR)).isEqualTo(address(clientMr) + 200);
        assertThat(UnsafeApi.getInt(sgList + VerbsLayout.SGE_SIZE + VerbsLayout.SGE_LENGTH)).isEqualTo(50);
        assertThat(UnsafeApi.getInt(sgList + VerbsLayout.SGE_LKEY)).isEqualTo(clientMr.getLkey());
        final long secondWr = cmd + VerbsLayout.SEND_WR_SIZE;
        assertThat(UnsafeApi.getLong(secondWr + VerbsLayout.SEND_WR_NEXT)).isZero();
        assertThat(UnsafeApi.getLong(secondWr + VerbsLayout.SEND_WR_ID)).isEqualTo(42);

        // The receive side: what NatPostRecvCall writes.
        final IbvRecvWR recv1 = new IbvRecvWR();
        recv1.setWr_id(0x77);
        recv1.setSg_list(new LinkedList<>(List.of(sge(address(serverMr) + 64, 32, serverMr.getLkey()))));
        recv1.setNum_sge(1);
        final IbvRecvWR recv2 = new IbvRecvWR();
        recv2.setWr_id(0x78);
        recv2.setSg_list(new LinkedList<>(List.of(sge(address(serverMr) + 128, 16, serverMr.getLkey()))));
        recv2.setNum_sge(1);
        final SVCPostRecv recvCall = server.qp.postRecv(List.of(recv1, recv2), null);
        final Field recvCmdField = recvCall.getClass().getDeclaredField("cmd");
        recvCmdField.setAccessible(true);
        final long recvCmd = ((MemBuf)recvCmdField.get(recvCall)).address();
        assertThat(UnsafeApi.getLong(recvCmd + VerbsLayout.RECV_WR_ID)).isEqualTo(0x77);
        assertThat(UnsafeApi.getLong(recvCmd + VerbsLayout.RECV_WR_NEXT)).isEqualTo(recvCmd + VerbsLayout.RECV_WR_SIZE);
        assertThat(UnsafeApi.getInt(recvCmd + VerbsLayout.RECV_WR_NUM_SGE)).isEqualTo(1);
        final long recvSges = UnsafeApi.getLong(recvCmd + VerbsLayout.RECV_WR_SG_LIST);
        assertThat(recvSges).isEqualTo(recvCmd + 2L * VerbsLayout.RECV_WR_SIZE);
        assertThat(UnsafeApi.getLong(recvSges + VerbsLayout.SGE_ADDR)).isEqualTo(address(serverMr) + 64);
        assertThat(UnsafeApi.getInt(recvSges + VerbsLayout.SGE_LENGTH)).isEqualTo(32);
        assertThat(UnsafeApi.getLong(UnsafeApi.getLong(recvCmd + VerbsLayout.RECV_WR_SIZE + VerbsLayout.RECV_WR_SG_LIST) +
            VerbsLayout.SGE_ADDR)).isEqualTo(address(serverMr) + 128);
        assertThat(UnsafeApi.getLong(recvCmd + VerbsLayout.RECV_WR_SIZE + VerbsLayout.RECV_WR_NEXT)).isZero();
        recvCall.free();

        // And the completions DiSNi reads back (ibv_wc at its offsets).
        server.postRecv(7, sge(address(serverMr) + 2048, 64, serverMr.getLkey()));
        server.postRecv(8, sge(address(serverMr) + 3072, 64, serverMr.getLkey()));
        call.execute().free();
        final List<IbvWC> received = EmuHost.poll(server.recvCq, 2);
        assertThat(received).hasSize(2);
        assertThat(received.get(0).getWr_id()).isEqualTo(7);
        assertThat(received.get(0).getOpcode()).isEqualTo(VerbsLayout.WC_OP_RECV_RDMA_WITH_IMM);
        assertThat(received.get(0).getByte_len()).isEqualTo(150);
        assertThat(received.get(0).getImm_data()).isEqualTo(0x0bad_cafe);
        assertThat(received.get(0).getWc_flags() & VerbsLayout.WC_WITH_IMM).isNotZero();
        assertThat(received.get(0).getQp_num()).isEqualTo(server.qp.getQp_num());
        assertThat(received.get(0).getSrc_qp()).isEqualTo(client.qp.getQp_num());
        assertThat(received.get(1).getOpcode()).isEqualTo(VerbsLayout.WC_OP_RECV);
        assertThat(received.get(1).getByte_len()).isEqualTo(7);
        final List<IbvWC> sent = EmuHost.poll(client.sendCq, 1);
        assertThat(sent.get(0).getWr_id()).isEqualTo(0x1122_3344_5566_7788L);
        assertThat(sent.get(0).getOpcode()).isEqualTo(VerbsLayout.WC_OP_RDMA_WRITE);
        assertThat(EmuHost.pollOnce(client.sendCq, 4)).as("the unsignaled SEND has no completion").isEmpty();
    }

    @Test
    void shouldRoundTripSocketAddressesThroughSockaddrIn() throws Exception
    {
        final RdmaCmId id = server.channel.createId(RdmaCm.RDMA_PS_TCP);
        try
        {
            id.bindAddr(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 51_234));
            assertThat(id.getSource()).isEqualTo(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 51_234));
        }
        finally
        {
            id.destroyId();
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // rdma_cm
    // ------------------------------------------------------------------------------------------------------------

    @Test
    void shouldGiveEachHostItsOwnDeviceAndConnectThem() throws Exception
    {
        assertThat(server.context.getCmd_fd()).isNotEqualTo(client.context.getCmd_fd());
        connect(7);
        assertThat(((InetSocketAddress)client.id.getDestination()).getAddress().getHostAddress()).isEqualTo("127.0.0.2");
        assertThat(((InetSocketAddress)server.id.getDestination()).getAddress().getHostAddress()).isEqualTo("127.0.0.1");
    }

    @Test
    void shouldRejectAConnectionToAPortWithoutListenerAndWhenTheRequestIsDestroyed() throws Exception
    {
        client.id = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        client.id.bindAddr(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
        client.id.resolveAddr(null, new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 9), EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED);
        client.id.resolveRoute(EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED);
        client.id.connect(new RdmaConnParam());
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED);

        final RdmaCmId listener = server.channel.createId(RdmaCm.RDMA_PS_TCP);
        listener.bindAddr(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
        listener.listen(4);
        client.id.destroyId();
        client.id = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        client.id.resolveAddr(null, listener.getSource(), EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED);
        client.id.resolveRoute(EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED);
        client.id.connect(new RdmaConnParam());
        final RdmaCmEvent request = server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST);
        request.getConnIdPriv().destroyId();
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED);
        listener.destroyId();
    }

    @Test
    void shouldRefusePrivateDataBeyondTheRcLimit() throws Exception
    {
        final RdmaCmId listener = server.channel.createId(RdmaCm.RDMA_PS_TCP);
        listener.bindAddr(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
        listener.listen(4);
        client.id = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        client.id.resolveAddr(null, listener.getSource(), EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED);
        client.id.resolveRoute(EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED);
        final ByteBuffer data = ByteBuffer.allocateDirect(57);
        final RdmaConnParam param = new RdmaConnParam();
        param.setPrivate_data(MemoryUtils.getAddress(data));
        param.setPrivate_data_len((byte)57);
        assertThatThrownBy(() -> client.id.connect(param)).isInstanceOf(IOException.class)
            .hasMessageContaining("rdma_connect failed: Invalid argument");
        listener.destroyId();
    }

    @Test
    void shouldReportDisconnectedAndTimewaitExitOnBothSidesAndFlushTheReceives() throws Exception
    {
        connect(7);
        server.postRecv(1, sge(address(serverMr), 64, serverMr.getLkey()));
        client.postRecv(2, sge(address(clientMr), 64, clientMr.getLkey()));
        client.id.disconnect();
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT);
        server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED);
        server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT);
        final List<IbvWC> clientFlushed = EmuHost.poll(client.recvCq, 1);
        assertThat(clientFlushed.get(0).getStatus()).isEqualTo(VerbsLayout.WC_WR_FLUSH_ERR);
        // The passive side's QP leaves RTS only when it disconnects in turn (rdma_disconnect moves it to ERROR).
        assertThat(EmuHost.pollOnce(server.recvCq, 4)).isEmpty();
        server.id.disconnect();
        assertThat(EmuHost.poll(server.recvCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_WR_FLUSH_ERR);
    }

    // ------------------------------------------------------------------------------------------------------------
    // RC semantics
    // ------------------------------------------------------------------------------------------------------------

    @Test
    void shouldDeliverInOrderAndCompleteOnlySignaledRequests() throws Exception
    {
        connect(7);
        for (int i = 0; i < 8; i++)
        {
            server.postRecv(i, sge(address(serverMr) + i * 8L, 8, serverMr.getLkey()));
        }
        for (int i = 0; i < 8; i++)
        {
            clientBuf.putLong(i * 8, 1000 + i);
            client.postSend(sendWr(100 + i, IbvSendWR.IBV_WR_SEND, i == 7 ? SIGNALED : 0,
                sge(address(clientMr) + i * 8L, 8, clientMr.getLkey())));
        }
        final List<IbvWC> received = EmuHost.poll(server.recvCq, 8);
        for (int i = 0; i < 8; i++)
        {
            assertThat(received.get(i).getWr_id()).isEqualTo(i);
            assertThat(serverBuf.getLong(i * 8)).isEqualTo(1000 + i);
        }
        final List<IbvWC> sent = EmuHost.poll(client.sendCq, 1);
        assertThat(sent).hasSize(1);
        assertThat(sent.get(0).getWr_id()).isEqualTo(107);
        assertThat(EmuHost.pollOnce(client.sendCq, 8)).isEmpty();
    }

    @Test
    void shouldReadRemoteMemoryWithRdmaRead() throws Exception
    {
        connect(7);
        serverBuf.putLong(512, 0x5eed_5eed_5eedL);
        final IbvSendWR read = sendWr(9, IbvSendWR.IBV_WR_RDMA_READ, SIGNALED, sge(address(clientMr) + 64, 8,
            clientMr.getLkey()));
        read.getRdma().setRemote_addr(address(serverMr) + 512);
        read.getRdma().setRkey(serverMr.getRkey());
        client.postSend(read);
        final IbvWC wc = EmuHost.poll(client.sendCq, 1).get(0);
        assertThat(wc.getStatus()).isEqualTo(VerbsLayout.WC_SUCCESS);
        assertThat(wc.getOpcode()).isEqualTo(VerbsLayout.WC_OP_RDMA_READ);
        assertThat(clientBuf.getLong(64)).isEqualTo(0x5eed_5eed_5eedL);
    }

    @Test
    void shouldFailTheQpOnRnrWithRetryCountZeroAndFlushWhatFollows() throws Exception
    {
        connect(0);
        client.postRecv(5, sge(address(clientMr) + 1024, 64, clientMr.getLkey()));
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        client.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        final List<IbvWC> sent = EmuHost.poll(client.sendCq, 2);
        assertThat(sent.get(0).getWr_id()).isEqualTo(1);
        assertThat(sent.get(0).getStatus()).as("an unsignaled request that fails completes").isEqualTo(
            VerbsLayout.WC_RNR_RETRY_EXC_ERR);
        assertThat(sent.get(1).getStatus()).isEqualTo(VerbsLayout.WC_WR_FLUSH_ERR);
        assertThat(EmuHost.poll(client.recvCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_WR_FLUSH_ERR);
    }

    @Test
    void shouldHoldAnRnrNakedSendUntilAReceiveIsPostedWhenRetriesAreInfinite() throws Exception
    {
        connect(7);
        clientBuf.putInt(0, 77);
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 4, clientMr.getLkey())));
        assertThat(EmuHost.pollOnce(client.sendCq, 1)).isEmpty();
        server.postRecv(3, sge(address(serverMr), 64, serverMr.getLkey()));
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_SUCCESS);
        assertThat(EmuHost.poll(server.recvCq, 1).get(0).getByte_len()).isEqualTo(4);
        assertThat(serverBuf.getInt(0)).isEqualTo(77);
    }

    @Test
    void shouldGiveProtectionErrorsForBadLkeyOutOfBoundsSgeAndDeregisteredMemory() throws Exception
    {
        connect(7);
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey() + 1)));
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_LOC_PROT_ERR);
        client.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).as("posted on a QP in ERROR").isEqualTo(
            VerbsLayout.WC_WR_FLUSH_ERR);
    }

    @Test
    void shouldGiveALocalProtectionErrorForAnSgeBeyondItsRegion() throws Exception
    {
        connect(7);
        server.postRecv(1, sge(address(serverMr), 8192, serverMr.getLkey()));
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr) + 4000, 200, clientMr.getLkey())));
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_LOC_PROT_ERR);
    }

    @Test
    void shouldNotTouchMemoryThroughADeregisteredRegion() throws Exception
    {
        connect(7);
        final ByteBuffer freed = ByteBuffer.allocateDirect(64);
        final IbvMr mr = client.register(freed, ALL);
        client.deregister(mr);
        server.postRecv(1, sge(address(serverMr), 64, serverMr.getLkey()));
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(mr.getAddr(), 8, mr.getLkey())));
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_LOC_PROT_ERR);
        assertThat(EmuHost.pollOnce(server.recvCq, 1)).as("nothing delivered").isEmpty();
    }

    @Test
    void shouldGiveRemoteAccessErrorsForABadRkeyAndMissingRemoteWriteAccess() throws Exception
    {
        final ByteBuffer readOnly = ByteBuffer.allocateDirect(64);
        final IbvMr readOnlyMr = server.register(readOnly, VerbsLayout.ACCESS_REMOTE_READ);
        connect(7);
        final IbvSendWR write = sendWr(1, IbvSendWR.IBV_WR_RDMA_WRITE, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey()));
        write.getRdma().setRemote_addr(readOnlyMr.getAddr());
        write.getRdma().setRkey(readOnlyMr.getRkey());
        client.postSend(write);
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_REM_ACCESS_ERR);
        assertThat(readOnly.getLong(0)).isZero();
    }

    @Test
    void shouldFailBothSidesWhenTheReceiveIsTooSmall() throws Exception
    {
        connect(7);
        server.postRecv(1, sge(address(serverMr), 4, serverMr.getLkey()));
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        assertThat(EmuHost.poll(server.recvCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_LOC_LEN_ERR);
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_REM_INV_REQ_ERR);
    }

    @Test
    void shouldRefuseAPostBeyondTheSendQueueUntilACompletionIsPolled() throws Exception
    {
        connect(7);
        for (int i = 0; i < 8; i++)
        {
            server.postRecv(i, sge(address(serverMr), 64, serverMr.getLkey()));
        }
        for (int i = 0; i < 8; i++)
        {
            client.postSend(sendWr(i, IbvSendWR.IBV_WR_SEND, i == 7 ? SIGNALED : 0, sge(address(clientMr), 8,
                clientMr.getLkey())));
        }
        assertThatThrownBy(() -> client.postSend(sendWr(8, IbvSendWR.IBV_WR_SEND, SIGNALED,
            sge(address(clientMr), 8, clientMr.getLkey())))).isInstanceOf(IOException.class)
            .hasMessageContaining("ibv_post_send failed: Cannot allocate memory");
        assertThat(EmuHost.poll(client.sendCq, 1)).hasSize(1);
        // The receive queue is full as well until its completions are polled.
        assertThatThrownBy(() -> server.postRecv(9, sge(address(serverMr), 64, serverMr.getLkey())))
            .isInstanceOf(IOException.class).hasMessageContaining("ibv_post_recv failed: Cannot allocate memory");
        assertThat(EmuHost.poll(server.recvCq, 8)).hasSize(8);
        server.postRecv(9, sge(address(serverMr), 64, serverMr.getLkey()));
        client.postSend(sendWr(9, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        assertThat(EmuHost.poll(client.sendCq, 1).get(0).getStatus()).isEqualTo(VerbsLayout.WC_SUCCESS);
    }

    @Test
    void shouldRefuseRegistrationsWithRemoteWriteButNoLocalWriteAndAPdStillInUse() throws Exception
    {
        assertThatThrownBy(() -> client.register(ByteBuffer.allocateDirect(64), VerbsLayout.ACCESS_REMOTE_WRITE))
            .isInstanceOf(IOException.class).hasMessageContaining("ibv_reg_mr failed: Invalid argument");
        assertThat(EmulatedFabric.instance().deallocPd(handleOf(client.pd))).isEqualTo(VerbsLayout.EBUSY);
    }

    @Test
    void shouldReuseAnIdNumberAsMallocWouldAndCatchCallsOnDestroyedObjects() throws Exception
    {
        final RdmaCmId first = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        final long number = handleOf(first);
        first.destroyId();
        final RdmaCmId second = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        assertThat(handleOf(second)).as("the freed rdma_cm_id's address, reused").isEqualTo(number);
        second.destroyId();

        final IbvCQ cq = client.context.createCQ(client.compChannel, 4, 0);
        final long cqHandle = handleOf(cq);
        cq.destroyCQ();
        final long wcs = UnsafeApi.allocateMemory(VerbsLayout.WC_SIZE);
        try
        {
            assertThatThrownBy(() -> EmulatedFabric.instance().engine.poll(cqHandle, 1, wcs))
                .isInstanceOf(IOException.class).hasMessageContaining("use after destroy");
        }
        finally
        {
            UnsafeApi.freeMemory(wcs);
        }
    }

    private static long handleOf(final Object natObject) throws Exception
    {
        return (Long)natObject.getClass().getMethod("getObjId").invoke(natObject);
    }

    // ------------------------------------------------------------------------------------------------------------
    // Time: the NIC executes after the post returns, and each side completes on its own
    // ------------------------------------------------------------------------------------------------------------

    @Test
    void shouldExecuteOnTheNicAfterThePostReadingTheSourceThenAndCompleteTheSenderOnlyWhenTheAckComes()
        throws Exception
    {
        connect(7);
        manualNic();
        server.postRecv(1, sge(address(serverMr), 64, serverMr.getLkey()));
        clientBuf.putLong(0, 1111);
        client.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        final IbvSendWR write = sendWr(3, IbvSendWR.IBV_WR_RDMA_WRITE, SIGNALED, sge(address(clientMr) + 8, 8,
            clientMr.getLkey()));
        write.getRdma().setRemote_addr(address(serverMr) + 512);
        write.getRdma().setRkey(serverMr.getRkey());
        clientBuf.putLong(8, 3333);
        client.postSend(write);
        assertThat(EmuHost.pollOnce(server.recvCq, 4)).as("nothing executed inside the post").isEmpty();
        assertThat(serverBuf.getLong(0)).isZero();
        assertThat(serverBuf.getLong(512)).isZero();
        // The application reuses its buffers before their completions: the NIC sends what is there when it runs.
        clientBuf.putLong(0, 2222);
        clientBuf.putLong(8, 4444);
        step();
        assertThat(serverBuf.getLong(0)).as("the SEND's data, read at execution").isEqualTo(2222);
        assertThat(serverBuf.getLong(512)).as("the WRITE's data, read at execution").isEqualTo(4444);
        assertThat(EmuHost.pollOnce(server.recvCq, 4)).as("the receiver completes at delivery").hasSize(1);
        assertThat(EmuHost.pollOnce(client.sendCq, 4)).as("the sender waits for the ACK").isEmpty();
        step();
        assertThat(EmuHost.pollOnce(client.sendCq, 4)).extracting(IbvWC::getWr_id).containsExactly(2L, 3L);
    }

    @Test
    void shouldFlushEveryRequestNotExecutedUnsignaledIncludedWhenTheQpEntersError() throws Exception
    {
        connect(7);
        manualNic();
        for (int i = 0; i < 3; i++)
        {
            server.postRecv(i, sge(address(serverMr), 64, serverMr.getLkey()));
        }
        client.postRecv(9, sge(address(clientMr) + 1024, 64, clientMr.getLkey()));
        clientBuf.putLong(0, 42);
        for (int i = 0; i < 3; i++)
        {
            client.postSend(sendWr(10 + i, IbvSendWR.IBV_WR_SEND, i == 2 ? SIGNALED : 0, sge(address(clientMr), 8,
                clientMr.getLkey())));
        }
        client.id.disconnect();
        step();
        final List<IbvWC> flushed = EmuHost.pollOnce(client.sendCq, 8);
        assertThat(flushed).extracting(IbvWC::getWr_id).containsExactly(10L, 11L, 12L);
        assertThat(flushed).extracting(IbvWC::getStatus).containsOnly(VerbsLayout.WC_WR_FLUSH_ERR);
        assertThat(EmuHost.pollOnce(client.recvCq, 4)).extracting(IbvWC::getStatus)
            .containsExactly(VerbsLayout.WC_WR_FLUSH_ERR);
        assertThat(EmuHost.pollOnce(server.recvCq, 4)).as("nothing was sent").isEmpty();
        assertThat(serverBuf.getLong(0)).isZero();
    }

    @Test
    void shouldRetryAnRnrNakedSendOnlyWhenTheRnrTimerExpiresAndFailAfterTheRetryCount() throws Exception
    {
        connect(2);
        manualNic();
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        server.postRecv(7, sge(address(serverMr), 64, serverMr.getLkey()));
        nic.advanceMillis(EmulatedFabric.RNR_TIMER_MS - 1);
        assertThat(EmuHost.pollOnce(server.recvCq, 1)).as("a receive posted meanwhile waits for the timer").isEmpty();
        nic.advanceMillis(1);
        assertThat(EmuHost.pollOnce(server.recvCq, 1)).hasSize(1);
        step();
        assertThat(EmuHost.pollOnce(client.sendCq, 1)).extracting(IbvWC::getStatus)
            .containsExactly(VerbsLayout.WC_SUCCESS);

        // No receive at all: two retries (rnr_retry 2), 655 ms apart, then RNR_RETRY_EXC_ERR.
        client.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        nic.advanceMillis(2L * EmulatedFabric.RNR_TIMER_MS - 1);
        assertThat(EmuHost.pollOnce(client.sendCq, 1)).isEmpty();
        nic.advanceMillis(1);
        assertThat(EmuHost.pollOnce(client.sendCq, 1)).extracting(IbvWC::getStatus)
            .containsExactly(VerbsLayout.WC_RNR_RETRY_EXC_ERR);
    }

    @Test
    void shouldRetryARequestNobodyAnswersEveryAckTimeoutAndFailWithRetryExceeded() throws Exception
    {
        connect(7);
        final QpEngine engine = EmulatedFabric.instance().engine;
        final int retry = EmulatedFabric.instance().find(handleOf(client.qp), EmuObjects.Qp.class).retry;
        // The peer's QP goes away without its CM saying so: nothing answers any more.
        server.id.destroyQP();
        server.qp = null;
        manualNic();
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        client.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        nic.advance((retry + 1) * engine.ackTimeoutNanos - 1);
        assertThat(EmuHost.pollOnce(client.sendCq, 4)).as("retrying for retry_count + 1 timeouts").isEmpty();
        nic.advance(1);
        final List<IbvWC> failed = EmuHost.pollOnce(client.sendCq, 4);
        assertThat(failed).extracting(IbvWC::getWr_id).containsExactly(1L, 2L);
        assertThat(failed).extracting(IbvWC::getStatus).containsExactly(VerbsLayout.WC_RETRY_EXC_ERR,
            VerbsLayout.WC_WR_FLUSH_ERR);
    }

    @Test
    void shouldRefuseSendsBeforeRtsWithEnomemAndTakeTheActiveQpToRtsInItsOwnEventProcessing() throws Exception
    {
        final RdmaCmId listener = server.channel.createId(RdmaCm.RDMA_PS_TCP);
        listener.bindAddr(new InetSocketAddress(InetAddress.getByName(server.address), 0));
        listener.listen(8);
        client.id = client.channel.createId(RdmaCm.RDMA_PS_TCP);
        client.id.bindAddr(new InetSocketAddress(InetAddress.getByName(client.address), 0));
        client.id.resolveAddr(null, (InetSocketAddress)listener.getSource(), EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED);
        client.id.resolveRoute(EmuHost.TIMEOUT_MS);
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED);
        client.qp = client.id.createQP(client.pd, client.initAttr(8));
        client.postRecv(5, sge(address(clientMr) + 1024, 64, clientMr.getLkey()));
        assertThatThrownBy(() -> client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8,
            clientMr.getLkey())))).as("a QP in INIT").hasMessageContaining("ibv_post_send failed: Cannot allocate memory");
        final RdmaConnParam connect = new RdmaConnParam();
        connect.setRetry_count((byte)7);
        client.id.connect(connect);
        server.id = server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST).getConnIdPriv();
        server.qp = server.id.createQP(server.pd, server.initAttr(8));
        server.postRecv(6, sge(address(serverMr), 64, serverMr.getLkey()));
        server.id.accept(new RdmaConnParam());
        listener.destroyId();
        // The passive QP is RTS once rdma_accept returns; the active one waits for its event loop.
        manualNic();
        serverBuf.putLong(128, 99);
        server.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(serverMr) + 128, 8, serverMr.getLkey())));
        assertThatThrownBy(() -> client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8,
            clientMr.getLkey())))).as("accepted, REP not processed").hasMessageContaining("Cannot allocate memory");
        step();
        assertThat(EmuHost.pollOnce(client.recvCq, 1)).as("dropped by a QP not yet RTR").isEmpty();
        assertThat(server.nextEvent(20)).as("no RTU before the active side processed the REP").isNull();
        client.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED);
        server.expect(RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED);
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        assertThat(EmuHost.pollOnce(server.recvCq, 1)).hasSize(1);
        // The passive side's early SEND is sent again when its ACK timer expires, and then lands.
        nic.advance(EmulatedFabric.instance().engine.ackTimeoutNanos);
        assertThat(EmuHost.pollOnce(client.recvCq, 1)).extracting(IbvWC::getByte_len).containsExactly(8);
        assertThat(clientBuf.getLong(1024)).isEqualTo(99);
        step();
        assertThat(EmuHost.pollOnce(server.sendCq, 1)).extracting(IbvWC::getStatus).containsExactly(VerbsLayout.WC_SUCCESS);
    }

    @Test
    void shouldLeaveTheWcFieldsMlx5DoesNotWriteAndFlagTheSendersCompletionOfSendWithImm() throws Exception
    {
        connect(7);
        manualNic();
        server.postRecv(1, sge(address(serverMr), 64, serverMr.getLkey()));
        final IbvSendWR send = sendWr(2, IbvSendWR.IBV_WR_SEND_WITH_IMM, SIGNALED, sge(address(clientMr), 8,
            clientMr.getLkey()));
        send.setImm_data(0x1234);
        client.postSend(send);
        step();
        step();
        final long wcs = UnsafeApi.allocateMemory(VerbsLayout.WC_SIZE);
        try
        {
            UnsafeApi.setMemory(wcs, VerbsLayout.WC_SIZE, (byte)0x5a);
            assertThat(EmulatedFabric.instance().engine.poll(handleOf(client.sendCq), 1, wcs)).isEqualTo(1);
            assertThat(UnsafeApi.getLong(wcs + VerbsLayout.WC_WR_ID)).isEqualTo(2);
            assertThat(UnsafeApi.getInt(wcs + VerbsLayout.WC_OPCODE)).isEqualTo(VerbsLayout.WC_OP_SEND);
            assertThat(UnsafeApi.getInt(wcs + VerbsLayout.WC_FLAGS)).isEqualTo(VerbsLayout.WC_WITH_IMM);
            assertThat(UnsafeApi.getInt(wcs + VerbsLayout.WC_BYTE_LEN)).as("stale").isEqualTo(0x5a5a_5a5a);
            assertThat(UnsafeApi.getInt(wcs + VerbsLayout.WC_IMM_DATA)).as("stale").isEqualTo(0x5a5a_5a5a);
            assertThat(UnsafeApi.getInt(wcs + VerbsLayout.WC_SRC_QP)).as("stale").isEqualTo(0x5a5a_5a5a);
        }
        finally
        {
            UnsafeApi.freeMemory(wcs);
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // Completion queues and channels
    // ------------------------------------------------------------------------------------------------------------

    @Test
    void shouldSignalOnlyCompletionsAddedAfterArming() throws Exception
    {
        connect(7);
        for (int i = 0; i < 3; i++)
        {
            server.postRecv(i, sge(address(serverMr), 64, serverMr.getLkey()));
        }
        manualNic();
        client.postSend(sendWr(1, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        // A completion before arming: arming does not raise an event for it (the application polls after arming).
        server.recvCq.reqNotification(false).execute().free();
        assertThat(server.compChannel.getCqEvent(server.recvCq, 50)).isFalse();
        assertThat(EmuHost.pollOnce(server.recvCq, 4)).hasSize(1);
        client.postSend(sendWr(2, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        assertThat(server.compChannel.getCqEvent(server.recvCq, EmuHost.TIMEOUT_MS)).isTrue();
        server.recvCq.ackEvents(1);
        // Not re-armed: the next completion raises nothing.
        client.postSend(sendWr(3, IbvSendWR.IBV_WR_SEND, 0, sge(address(clientMr), 8, clientMr.getLkey())));
        step();
        assertThat(server.compChannel.getCqEvent(server.recvCq, 50)).isFalse();
        assertThat(EmuHost.pollOnce(server.recvCq, 4)).hasSize(2);
    }

    @Test
    void shouldFailPollingAndTheQpsOnCqOverflow() throws Exception
    {
        final EmuHost small = host("127.0.0.3", 1);
        final ByteBuffer buffer = ByteBuffer.allocateDirect(256);
        final IbvMr mr = small.register(buffer, ALL);
        EmuHost.connect(server, small, 8, 7, 7);
        for (int i = 0; i < 4; i++)
        {
            server.postRecv(i, sge(address(serverMr), 64, serverMr.getLkey()));
        }
        // ibv_create_cq(1) holds 1 entry (mlx5 rounds 1 + 1 up to 2 and keeps one free); the third overflows.
        manualNic();
        for (int i = 0; i < 3; i++)
        {
            small.postSend(sendWr(i, IbvSendWR.IBV_WR_SEND, SIGNALED, sge(mr.getAddr(), 8, mr.getLkey())));
        }
        step();
        step();
        assertThatThrownBy(() -> EmuHost.pollOnce(small.sendCq, 4)).isInstanceOf(IOException.class)
            .hasMessageContaining("Polling CQ failed");
    }
}
