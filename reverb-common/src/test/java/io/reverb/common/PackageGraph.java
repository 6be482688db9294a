package io.reverb.common;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.spi.ToolProvider;

/**
 * The package dependency graph of a directory of compiled classes, as {@code jdeps -verbose:package} reports it
 * (from the bytecode: what a class really uses, not what its javadoc mentions). Tests of every module use it to
 * check that the module has no package cycle and that a package does not reach a library it must not need (the
 * engine and Reactor, for instance). Published in reverb-common's test-jar.
 */
public final class PackageGraph
{
    private final Map<String, Set<String>> edges;

    private PackageGraph(final Map<String, Set<String>> edges)
    {
        this.edges = edges;
    }

    /**
     * Runs jdeps (through {@link ToolProvider}, in this JVM) over a classes directory or jar.
     *
     * @param classes a module's {@code target/classes}, or a jar.
     * @return its graph.
     * @throws IllegalStateException if jdeps is not in this JDK or fails.
     */
    public static PackageGraph of(final Path classes)
    {
        if (!Files.exists(classes))
        {
            throw new IllegalStateException(classes + " does not exist: compile the module first");
        }
        final ToolProvider jdeps = ToolProvider.findFirst("jdeps")
            .orElseThrow(() -> new IllegalStateException("jdeps is not in this JDK (module jdk.jdeps)"));
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int rc = jdeps.run(new PrintWriter(out), new PrintWriter(err), "-verbose:package", classes.toString());
        if (rc != 0)
        {
            throw new IllegalStateException("jdeps failed (" + rc + ") on " + classes + ": " + err + out);
        }
        return parse(out.toString());
    }

    /**
     * Reads jdeps' {@code -verbose:package} output: lines {@code from -> to location}.
     *
     * @param jdepsOutput what jdeps printed.
     * @return the graph.
     */
    static PackageGraph parse(final String jdepsOutput)
    {
        final Map<String, Set<String>> edges = new TreeMap<>();
        for (final String line : jdepsOutput.split("\n"))
        {
            final String[] words = line.trim().split("\\s+");
            if (words.length >= 3 && "->".equals(words[1]) && line.startsWith(" "))
            {
                edges.computeIfAbsent(words[0], p -> new TreeSet<>()).add(words[2]);
            }
        }
        return new PackageGraph(edges);
    }

    /**
     * @return the packages of the classes examined (those with at least one dependency, i.e. all of them).
     */
    public Set<String> packages()
    {
        return Collections.unmodifiableSet(edges.keySet());
    }

    /**
     * @param packagePrefix a package name; its subpackages are included.
     * @return every package that classes in it depend on (java.*, libraries and the module's own).
     */
    public Set<String> dependenciesOf(final String packagePrefix)
    {
        final Set<String> result = new TreeSet<>();
        edges.forEach((from, to) ->
        {
            if (within(from, packagePrefix))
            {
                result.addAll(to);
            }
        });
        return result;
    }

    /**
     * @param packagePrefix      the packages examined (subpackages included).
     * @param forbiddenPrefixes  packages they must not use (subpackages included), e.g. {@code "reactor"}.
     * @return {@code "from -> to"} for every such use; empty when there is none.
     */
    public List<String> uses(final String packagePrefix, final String... forbiddenPrefixes)
    {
        final List<String> result = new ArrayList<>();
        edges.forEach((from, to) ->
        {
            if (within(from, packagePrefix))
            {
                for (final String target : to)
                {
                    for (final String forbidden : forbiddenPrefixes)
                    {
                        if (within(target, forbidden))
                        {
                            result.add(from + " -> " + target);
                        }
                    }
                }
            }
        });
        return result;
    }

    /**
     * The package cycles among the examined packages (strongly connected components of more than one package;
     * a package's use of itself is not a cycle).
     *
     * @return each cycle's packages, sorted; empty when the graph is acyclic.
     */
    public List<Set<String>> cycles()
    {
        return new Tarjan().run();
    }

    private static boolean within(final String pkg, final String prefix)
    {
        return pkg.equals(prefix) || pkg.startsWith(prefix + ".");
    }

    /** Tarjan's strongly connected components, iterative bookkeeping kept small: graphs here have tens of nodes. */
    private final class Tarjan
    {
        private final Map<String, Integer> index = new HashMap<>();
        private final Map<String, Integer> low = new HashMap<>();
        private final Deque<String> stack = new ArrayDeque<>();
        private final Set<String> onStack = new TreeSet<>();
        private final List<Set<String>> components = new ArrayList<>();
        private int next;

        List<Set<String>> run()
        {
            for (final String node : edges.keySet())
            {
                if (!index.containsKey(node))
                {
                    visit(node);
                }
            }
            return components;
        }

        private void visit(final String node)
        {
            index.put(node, next);
            low.put(node, next);
            next++;
            stack.push(node);
            onStack.add(node);
            for (final String target : edges.getOrDefault(node, Set.of()))
            {
                if (!edges.containsKey(target) || target.equals(node))
                {
                    continue; // outside the examined classes, or a package using itself
                }
                if (!index.containsKey(target))
                {
                    visit(target);
                    low.put(node, Math.min(low.get(node), low.get(target)));
                }
                else if (onStack.contains(target))
                {
                    low.put(node, Math.min(low.get(node), index.get(target)));
                }
            }
            if (low.get(node).equals(index.get(node)))
            {
                final Set<String> component = new TreeSet<>();
                String member;
                do
                {
                    member = stack.pop();
                    onStack.remove(member);
                    component.add(member);
                }
                while (!member.equals(node));
                if (component.size() > 1)
                {
                    components.add(component);
                }
            }
        }
    }

    @Override
    public String toString()
    {
        final StringBuilder text = new StringBuilder();
        edges.forEach((from, to) -> to.forEach(target -> text.append(from).append(" -> ").append(target).append('\n')));
        return text.toString();
    }
}
