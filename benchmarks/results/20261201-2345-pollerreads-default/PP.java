import java.util.concurrent.locks.LockSupport;
import java.util.*;
public class PP {
  static volatile int turn = 0; static volatile Thread a, b;
  public static void main(String[] x) throws Exception {
    int n = 20000; long[] lat = new long[n];
    b = new Thread(() -> { for (int i = 0; i < n; i++) { while (turn != 1) LockSupport.park(); turn = 0; LockSupport.unpark(a); } });
    a = Thread.currentThread(); b.start();
    for (int i = 0; i < n; i++) { long t = System.nanoTime(); turn = 1; LockSupport.unpark(b); while (turn != 0) LockSupport.park(); lat[i] = System.nanoTime() - t; }
    Arrays.sort(lat); System.out.printf("park/unpark round trip: p50 %.1f us p99 %.1f us%n", lat[n/2]/1e3, lat[n*99/100]/1e3);
  }
}
