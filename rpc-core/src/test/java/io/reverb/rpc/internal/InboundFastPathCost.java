package io.reverb.rpc.internal;

import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.TestService;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ResourceUsage;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;

/**
 * Not a test: the CPU time (of the reading thread, so that a loaded machine's preemption does not count) of a server
 * connection's inbound path for uncompressed frames, unary CALL+MESSAGE and MESSAGEs streamed on one call, with no
 * transport behind it. Issue 38 used it to check that the inflater lane left the uncompressed path's cost unchanged,
 * running it once against main's rpc-core and once against the branch's, alternately, with the same test classes:
 * {@code java -cp <this class>:<WireFrames>:<rpc-core classes>:<rpc-core tests jar>:<dependencies>
 * io.reverb.rpc.internal.InboundFastPathCost 300000 branch}.
 */
public final class InboundFastPathCost
{
    /** A transport connection that takes every write and keeps nothing. */
    static final class NullConnection implements Connection, WriteClaim.Committer
    {
        private final ByteBuffer buffer = ByteBuffer.allocate(1 << 16);

        @Override
        public boolean signalsReadComplete()
        {
            return false;
        }

        @Override
        public int tryClaim(final int length, final WriteClaim claim)
        {
            claim.wrap(buffer, 0, length, this, 0);
            return ClaimResult.OK;
        }

        @Override
        public int commit(final WriteClaim claim)
        {
            return ClaimResult.OK;
        }

        @Override
        public void abort(final WriteClaim claim)
        {
        }

        @Override
        public int maxMessageLength()
        {
            return 1 << 16;
        }

        @Override
        public void close()
        {
        }

        @Override
        public boolean isOpen()
        {
            return true;
        }

        @Override
        public String localAddress()
        {
            return "local";
        }

        @Override
        public String remoteAddress()
        {
            return "remote";
        }

        @Override
        public ResourceUsage resourceUsage()
        {
            return ResourceUsage.NONE;
        }
    }

    private InboundFastPathCost()
    {
    }

    /**
     * @param args calls per round, and a label for the output.
     */
    public static void main(final String[] args)
    {
        final int calls = Integer.parseInt(args[0]);
        final ServerRuntime server = TestRuntimes.server(new TestService());
        final WireFrames frames = new WireFrames();
        final Marshaller<BytesValue> bytes = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final Marshaller<Int32Value> ints = ProtoMarshaller.of(Int32Value.getDefaultInstance());
        final byte[][] unary = new byte[calls][];
        for (int i = 0; i < calls; i++)
        {
            unary[i] = WireFrames.concat(frames.call(i + 1, TestService.SIZE, 1),
                frames.message(i + 1, bytes, BytesValue.getDefaultInstance(), true));
        }
        final byte[] streamed = frames.message(1, ints, Int32Value.of(7), false);
        final ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        for (int round = 0; round < 8; round++)
        {
            final NullConnection transport = new NullConnection();
            final ServerWireConnection connection = new ServerWireConnection(server, transport);
            long t0 = bean.getCurrentThreadCpuTime();
            for (int i = 0; i < calls; i++)
            {
                connection.onMessage(transport, ByteBuffer.wrap(unary[i]));
            }
            final long unaryNs = bean.getCurrentThreadCpuTime() - t0;
            // one client-streaming SUM call, its handler asks for all: many MESSAGE frames on one stream
            final NullConnection t2 = new NullConnection();
            final ServerWireConnection c2 = new ServerWireConnection(server, t2);
            c2.onMessage(t2, ByteBuffer.wrap(frames.call(1, TestService.SUM, 1)));
            t0 = bean.getCurrentThreadCpuTime();
            for (int i = 0; i < calls; i++)
            {
                c2.onMessage(t2, ByteBuffer.wrap(streamed));
            }
            final long streamNs = bean.getCurrentThreadCpuTime() - t0;
            if (round >= 3)
            {
                System.out.printf("%s round %d: unary CALL+MESSAGE %.1f ns/call, streamed MESSAGE %.1f ns/message%n",
                    args[1], round, (double)unaryNs / calls, (double)streamNs / calls);
            }
        }
    }
}
