import java.net.*;
import java.nio.*;
import java.nio.channels.*;
import java.util.*;

/** Raw loopback floor: echo of N bytes, client and server in separate processes. */
public class Loop {
    public static void main(String[] a) throws Exception {
        String mode = a[0];
        int size = Integer.parseInt(a[1]);
        int buf = Integer.parseInt(a[2]);   // 0 = default
        boolean spin = a.length > 3 && a[3].equals("spin");
        if (mode.equals("server")) {
            ServerSocketChannel ss = ServerSocketChannel.open();
            if (buf > 0) ss.setOption(StandardSocketOptions.SO_RCVBUF, buf);
            ss.bind(new InetSocketAddress("127.0.0.1", 0));
            System.out.println(((InetSocketAddress) ss.getLocalAddress()).getPort());
            System.out.flush();
            SocketChannel c = ss.accept();
            setup(c, buf, spin);
            ByteBuffer b = ByteBuffer.allocateDirect(size);
            while (true) {
                b.clear();
                if (!readFully(c, b)) return;
                b.flip();
                writeFully(c, b);
            }
        } else {
            int port = Integer.parseInt(a[4]);
            SocketChannel c = SocketChannel.open();
            if (buf > 0) c.setOption(StandardSocketOptions.SO_RCVBUF, buf);
            c.connect(new InetSocketAddress("127.0.0.1", port));
            setup(c, buf, spin);
            ByteBuffer b = ByteBuffer.allocateDirect(size);
            int iters = size > 100000 ? 3000 : 100000;
            long[] lat = new long[iters];
            for (int w = 0; w < 2; w++) {
                for (int i = 0; i < iters; i++) {
                    long t0 = System.nanoTime();
                    b.clear(); writeFully(c, b); b.clear(); readFully(c, b);
                    lat[i] = System.nanoTime() - t0;
                }
            }
            Arrays.sort(lat);
            long sum = 0; for (long l : lat) sum += l;
            System.out.printf("size %d buf %d spin %s: p50 %.1f us, p99 %.1f us, mean %.1f us, min %.1f us%n",
                size, buf, spin, lat[iters / 2] / 1e3, lat[iters * 99 / 100] / 1e3, sum / 1e3 / iters, lat[0] / 1e3);
            c.close();
        }
    }
    static void setup(SocketChannel c, int buf, boolean spin) throws Exception {
        c.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (buf > 0) { c.setOption(StandardSocketOptions.SO_SNDBUF, buf); c.setOption(StandardSocketOptions.SO_RCVBUF, buf); }
        if (spin) c.configureBlocking(false);
    }
    static boolean readFully(SocketChannel c, ByteBuffer b) throws Exception {
        while (b.hasRemaining()) { int n = c.read(b); if (n < 0) return false; if (n == 0) Thread.onSpinWait(); }
        return true;
    }
    static void writeFully(SocketChannel c, ByteBuffer b) throws Exception {
        while (b.hasRemaining()) { if (c.write(b) == 0) Thread.onSpinWait(); }
    }
}
