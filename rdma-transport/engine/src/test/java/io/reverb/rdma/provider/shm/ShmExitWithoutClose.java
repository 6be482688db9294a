package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;

/**
 * Child JVM for {@link ShmProviderTest}: opens a context, creates files, lists on a name, prints
 * {@code READY} and exits (status 0) without closing anything, leaving the clean-up to the shutdown hook.
 */
public final class ShmExitWithoutClose
{
    private ShmExitWithoutClose()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final VerbsContext context = new ShmVerbsProvider().open(VerbsConfig.defaults());
        final ProtectionDomain pd = context.allocPd();
        pd.allocate(1 << 20, Access.ALL);
        context.createCq(16, context.createCompletionChannel());
        context.listen(args[0], 1);
        System.out.println("READY");
        System.out.flush();
        System.exit(0);
    }
}
