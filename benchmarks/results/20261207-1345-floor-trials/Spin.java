import java.util.concurrent.atomic.*;
public class Spin {
  static volatile long v; static long sink;
  static final AtomicInteger ai = new AtomicInteger();
  public static void main(String[] a) {
    for (int r = 0; r < 3; r++) {
      int n = 20_000_000;
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) Thread.onSpinWait();
      long t1 = System.nanoTime();
      for (int i = 0; i < n; i++) { ai.incrementAndGet(); ai.decrementAndGet(); }
      long t2 = System.nanoTime();
      for (int i = 0; i < n; i++) { sink += v; }
      long t3 = System.nanoTime();
      long x = 12345; int cap = 1 << 20; 
      for (int i = 0; i < n; i++) { x = x + (x % (cap + i % 3 + 1)); }
      long t4 = System.nanoTime(); sink += x;
      for (int i = 0; i < n; i++) { sink += System.nanoTime(); }
      long t5 = System.nanoTime();
      System.out.printf("pause %.1f ns, 2 atomics %.1f ns, volatile load %.1f ns, long%% ~%.1f ns, nanoTime %.1f ns%n",
        (t1-t0)/(double)n, (t2-t1)/(double)n, (t3-t2)/(double)n, (t4-t3)/(double)n, (t5-t4)/(double)n);
    }
  }
}
