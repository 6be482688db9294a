/*
 * Copyright 2026 The Reverb Authors. Licensed under the Apache License, Version 2.0.
 */

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Checks a staged Maven repository (what {@code mvn deploy -DaltDeploymentRepository=local::file:DIR} writes)
 * against the rules Maven Central applies to an upload, so that a release fails here rather than at the portal.
 *
 * <p>Run by {@code bin/release-check} (a single-file program: {@code java bin/ReleaseCheck.java}, no build
 * needed). For every artifact (a {@code group/artifact/version/} directory with a pom) it checks:
 * <ul>
 *   <li>the pom's coordinates match its path, and the version is not a {@code -SNAPSHOT};</li>
 *   <li>the files: the pom, and unless the packaging is {@code pom} the jar, {@code -sources.jar} and
 *       {@code -javadoc.jar}; every file has its {@code .asc}, {@code .md5} and {@code .sha1}, and the checksums
 *       match the bytes (optionally each signature is verified with gpg);</li>
 *   <li>the pom (with what it inherits from parents staged beside it) has name, description, url, a licence with
 *       name and url, a developer with a name and scm with connection and url;</li>
 *   <li>no dependency, managed dependency, plugin or parent is a SNAPSHOT once properties and the parents'
 *       dependencyManagement are applied, and every dependency's version can be worked out from the poms; no
 *       {@code <repositories>}/{@code <pluginRepositories>} other than Central itself;</li>
 *   <li>each main jar carries a valid, unique {@code Automatic-Module-Name} (archetypes excepted: they are not
 *       libraries), a sources jar with sources and a javadoc jar with an index;</li>
 *   <li>with {@code --source ROOT}: every module of the reactor that is published (no
 *       {@code reverb.unpublished=true}) is staged, and nothing that is not published is.</li>
 * </ul>
 * {@code --self-test} builds a good layout and a series of broken ones in a temporary directory and proves each
 * broken one is reported.
 */
public final class ReleaseCheck {

    private static final Set<String> CHECKSUMS = Set.of("md5", "sha1");
    private static final Set<String> SIDE_FILES = Set.of("asc", "md5", "sha1", "sha256", "sha512");
    /** Central itself: the only repositories a published pom may name. */
    private static final Pattern CENTRAL_URL =
        Pattern.compile("https://repo(1)?\\.maven\\.(apache\\.)?org/maven2/?");
    private static final Pattern PROPERTY = Pattern.compile("\\$\\{([^}]+)}");
    private static final Pattern MODULE_NAME =
        Pattern.compile("[A-Za-z_$][A-Za-z0-9_$]*(\\.[A-Za-z_$][A-Za-z0-9_$]*)*");

    private final Path staging;
    private final List<String> problems = new ArrayList<>();
    private final List<String> warnings = new ArrayList<>();
    /** Staged poms by "groupId:artifactId:version". */
    private final Map<String, Pom> poms = new TreeMap<>();
    private final Map<String, String> moduleNames = new HashMap<>();

    private Path sourceRoot;
    private boolean verifySignatures;
    private boolean forUpload;
    private String expectedVersion;
    private final Map<String, List<String>> requiredEntries = new HashMap<>();

    private ReleaseCheck(Path staging) {
        this.staging = staging;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--self-test")) {
            System.exit(selfTest() ? 0 : 1);
        }
        Path dir = null;
        Map<String, List<String>> entries = new HashMap<>();
        Path source = null;
        boolean gpg = false;
        boolean upload = false;
        String version = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--source" -> source = Path.of(args[++i]);
                case "--verify-signatures" -> gpg = true;
                case "--for-upload" -> upload = true;
                case "--version" -> version = args[++i];
                case "--require-entry" -> {
                    String[] ga = args[++i].split("=", 2);
                    entries.computeIfAbsent(ga[0], k -> new ArrayList<>()).add(ga[1]);
                }
                default -> {
                    if (args[i].startsWith("-") || dir != null) {
                        System.err.println("usage: ReleaseCheck STAGING_DIR [--source ROOT] [--version V]"
                            + " [--verify-signatures] [--for-upload] [--require-entry GROUP:ARTIFACT=PATH]...\n"
                            + "       ReleaseCheck --self-test");
                        System.exit(64);
                    }
                    dir = Path.of(args[i]);
                }
            }
        }
        if (dir == null || !Files.isDirectory(dir)) {
            System.err.println("ReleaseCheck: no staging directory " + dir);
            System.exit(64);
        }
        ReleaseCheck check = new ReleaseCheck(dir);
        check.sourceRoot = source;
        check.verifySignatures = gpg;
        check.forUpload = upload;
        check.expectedVersion = version;
        check.requiredEntries.putAll(entries);
        check.run();
        check.warnings.forEach(w -> System.out.println("WARNING: " + w));
        check.problems.forEach(p -> System.out.println("PROBLEM: " + p));
        System.out.println(check.poms.size() + " artifacts checked in " + dir + ": "
            + (check.problems.isEmpty() ? "PASSED" : "FAILED (" + check.problems.size() + " problems)"));
        System.exit(check.problems.isEmpty() ? 0 : 1);
    }

    // ---------------------------------------------------------------------------------------------------------------

    private void run() throws IOException {
        List<Path> versionDirs;
        try (Stream<Path> files = Files.walk(staging)) {
            versionDirs = files.filter(p -> p.getFileName().toString().endsWith(".pom"))
                .map(Path::getParent).distinct().sorted().toList();
        }
        if (versionDirs.isEmpty()) {
            problems.add("no artifact (no .pom) under " + staging);
            return;
        }
        for (Path dir : versionDirs) {
            Path rel = staging.relativize(dir);
            if (rel.getNameCount() < 3) {
                problems.add(rel + ": not a group/artifact/version directory");
                continue;
            }
            String version = rel.getFileName().toString();
            String artifactId = rel.getParent().getFileName().toString();
            String groupId = rel.getParent().getParent().toString().replace(rel.getFileSystem().getSeparator(), ".");
            Path pomFile = dir.resolve(artifactId + "-" + version + ".pom");
            if (!Files.isRegularFile(pomFile)) {
                problems.add(rel + ": no " + pomFile.getFileName() + " (a pom of another name is there)");
                continue;
            }
            Pom pom;
            try {
                pom = Pom.read(pomFile, dir);
            } catch (Exception e) {
                problems.add(rel + ": unreadable pom: " + e.getMessage());
                continue;
            }
            if (!groupId.equals(pom.groupId()) || !artifactId.equals(pom.artifactId()) || !version.equals(pom.version())) {
                problems.add(rel + ": the pom says " + pom.gav() + ", its path " + groupId + ":" + artifactId + ":" + version);
            }
            poms.put(groupId + ":" + artifactId + ":" + version, pom);
        }
        for (Pom pom : poms.values()) {
            checkArtifact(pom);
        }
        if (sourceRoot != null) {
            checkAgainstReactor();
        }
        requiredEntries.keySet().stream()
            .filter(ga -> poms.values().stream().noneMatch(p -> (p.groupId() + ":" + p.artifactId()).equals(ga)))
            .forEach(ga -> problems.add(ga + ": not staged (a --require-entry names it)"));
    }

    private void checkArtifact(Pom pom) throws IOException {
        String id = pom.gav();
        String base = pom.artifactId() + "-" + pom.version();
        if (pom.version().contains("SNAPSHOT")) {
            problems.add(id + ": a SNAPSHOT version is not a release");
        }
        if (expectedVersion != null && pom.groupId().equals(rootGroup()) && !pom.version().equals(expectedVersion)) {
            problems.add(id + ": version " + pom.version() + ", the release is " + expectedVersion);
        }
        String packaging = pom.text("packaging", "jar");
        boolean hasJar = !packaging.equals("pom");
        List<String> required = new ArrayList<>(List.of(base + ".pom"));
        if (hasJar) {
            required.addAll(List.of(base + ".jar", base + "-sources.jar", base + "-javadoc.jar"));
        }
        for (String name : required) {
            if (!Files.isRegularFile(pom.dir().resolve(name))) {
                problems.add(id + ": missing " + name);
            }
        }
        checkFiles(pom, base);
        checkMetadata(pom);
        checkVersions(pom);
        checkRepositories(pom);
        if (hasJar) {
            checkJars(pom, base, packaging);
        }
    }

    /** Every file has its signature and checksums, and the checksums match. */
    private void checkFiles(Pom pom, String base) throws IOException {
        List<Path> files;
        try (Stream<Path> list = Files.list(pom.dir())) {
            files = list.filter(Files::isRegularFile).sorted().toList();
        }
        for (Path f : files) {
            String name = f.getFileName().toString();
            if (name.startsWith("maven-metadata")) {
                continue;
            }
            if (!name.startsWith(base)) {
                problems.add(pom.gav() + ": " + name + " does not belong to it (files start with " + base + ")");
                continue;
            }
            String ext = name.substring(name.lastIndexOf('.') + 1);
            if (SIDE_FILES.contains(ext)) {
                Path of = f.resolveSibling(name.substring(0, name.length() - ext.length() - 1));
                if (!Files.exists(of)) {
                    problems.add(pom.gav() + ": " + name + " has no " + of.getFileName() + " beside it");
                } else if (!ext.equals("asc")) {
                    checkChecksum(pom, of, ext, f);
                }
                continue;
            }
            if (!Files.isRegularFile(f.resolveSibling(name + ".asc"))) {
                problems.add(pom.gav() + ": " + name + " is not signed (no " + name + ".asc)");
            } else if (verifySignatures) {
                verifySignature(pom, f, f.resolveSibling(name + ".asc"));
            }
            for (String sum : CHECKSUMS) {
                if (!Files.isRegularFile(f.resolveSibling(name + "." + sum))) {
                    problems.add(pom.gav() + ": " + name + " has no ." + sum);
                }
            }
        }
    }

    private void checkChecksum(Pom pom, Path file, String algorithm, Path sumFile) throws IOException {
        String expected = Files.readString(sumFile, StandardCharsets.US_ASCII).trim().split("\\s+")[0].toLowerCase();
        String actual = digest(file, algorithm);
        if (!actual.equals(expected)) {
            problems.add(pom.gav() + ": " + sumFile.getFileName() + " does not match " + file.getFileName()
                + " (bad checksum: file has " + actual + ")");
        }
    }

    private void verifySignature(Pom pom, Path file, Path asc) {
        try {
            Process p = new ProcessBuilder("gpg", "--batch", "--quiet", "--verify", asc.toString(), file.toString())
                .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                problems.add(pom.gav() + ": bad signature " + asc.getFileName() + ": " + out.strip());
            }
        } catch (IOException e) {
            problems.add("cannot run gpg to verify signatures: " + e.getMessage());
            verifySignatures = false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The elements Central requires, in the pom or (for those Maven inherits) in a staged parent. */
    private void checkMetadata(Pom pom) {
        String id = pom.gav();
        if (pom.text("name", "").isBlank()) {
            problems.add(id + ": no <name> (Maven does not inherit it: each pom needs its own)");
        }
        for (String element : List.of("description", "url")) {
            if (inherited(pom, p -> p.text(element, "")).isBlank()) {
                problems.add(id + ": no <" + element + ">");
            }
        }
        Element licenses = inheritedElement(pom, "licenses");
        if (licenses == null || Pom.children(licenses, "license").stream()
            .noneMatch(l -> !Pom.text(l, "name", "").isBlank() && !Pom.text(l, "url", "").isBlank())) {
            problems.add(id + ": no <licenses><license> with a name and a url");
        }
        Element developers = inheritedElement(pom, "developers");
        if (developers == null || Pom.children(developers, "developer").stream()
            .noneMatch(d -> !Pom.text(d, "name", "").isBlank())) {
            problems.add(id + ": no <developers><developer> with a name");
        }
        Element scm = inheritedElement(pom, "scm");
        if (scm == null || Pom.text(scm, "url", "").isBlank() || Pom.text(scm, "connection", "").isBlank()) {
            problems.add(id + ": no <scm> with a connection and a url");
        }
        String url = inherited(pom, p -> p.text("url", ""));
        if (url.contains(".example") || url.contains("example.com")) {
            String message = id + ": url " + url + " is a placeholder: set the project's real address before uploading";
            if (forUpload) {
                problems.add(message);
            } else if (pom.parent() == null) {
                warnings.add(message);
            }
        }
    }

    /** No SNAPSHOT anywhere a consumer's build would resolve, and every dependency's version known. */
    private void checkVersions(Pom pom) {
        String id = pom.gav();
        Element parent = pom.parent();
        if (parent != null) {
            String pv = Pom.text(parent, "version", "");
            if (pv.contains("SNAPSHOT")) {
                problems.add(id + ": parent " + Pom.text(parent, "artifactId", "") + " is a SNAPSHOT (" + pv + ")");
            }
            String key = Pom.text(parent, "groupId", "") + ":" + Pom.text(parent, "artifactId", "") + ":" + pv;
            if (!poms.containsKey(key)) {
                if (Pom.text(parent, "groupId", "").equals(pom.groupId())) {
                    problems.add(id + ": its parent " + key + " is not staged");
                } else {
                    warnings.add(id + ": parent " + key + " is not staged: its metadata is not checked");
                }
            }
        }
        Map<String, String> props = properties(pom);
        List<Pom> chain = chain(pom);
        boolean importsBom = chain.stream().flatMap(p -> p.managedDependencies().stream())
            .anyMatch(d -> "import".equals(Pom.text(d, "scope", "")));
        for (Element dep : pom.managedDependencies()) {
            checkVersion(id, "managed dependency", dep, interpolate(Pom.text(dep, "version", ""), props), true);
        }
        for (Element dep : pom.dependencies()) {
            String version = Pom.text(dep, "version", "");
            if (version.isEmpty()) {
                version = managedVersion(chain, dep, props);
                if (version.isEmpty()) {
                    if (!importsBom) {
                        problems.add(id + ": dependency " + ga(dep) + " has no version and nothing manages it");
                    }
                    continue;
                }
            }
            checkVersion(id, "dependency", dep, interpolate(version, props), true);
        }
        for (Element plugin : pom.plugins()) {
            checkVersion(id, "plugin", plugin, interpolate(Pom.text(plugin, "version", ""), props), false);
        }
    }

    private void checkVersion(String id, String what, Element dep, String version, boolean mustResolve) {
        if (version.contains("SNAPSHOT")) {
            problems.add(id + ": " + what + " " + ga(dep) + " is a SNAPSHOT (" + version + ")");
        } else if (mustResolve && version.contains("${")) {
            problems.add(id + ": " + what + " " + ga(dep) + " has a version no pom defines (" + version + ")");
        }
    }

    private static String managedVersion(List<Pom> chain, Element dep, Map<String, String> props) {
        String key = ga(dep) + ":" + Pom.text(dep, "type", "jar") + ":" + Pom.text(dep, "classifier", "");
        for (Pom p : chain) {
            for (Element m : p.managedDependencies()) {
                String mk = ga(m) + ":" + Pom.text(m, "type", "jar") + ":" + Pom.text(m, "classifier", "");
                if (interpolate(mk, props).equals(interpolate(key, props))) {
                    return Pom.text(m, "version", "");
                }
            }
        }
        return "";
    }

    private void checkRepositories(Pom pom) {
        for (Pom p : chain(pom)) {
            for (String url : p.repositoryUrls()) {
                if (!CENTRAL_URL.matcher(url.trim()).matches()) {
                    problems.add(pom.gav() + ": names repository " + url
                        + (p == pom ? "" : " (through " + p.gav() + ")")
                        + ": a pom on Central must resolve from Central alone");
                }
            }
        }
    }

    private void checkJars(Pom pom, String base, String packaging) throws IOException {
        String id = pom.gav();
        Path jar = pom.dir().resolve(base + ".jar");
        int classes = 0;
        if (Files.isRegularFile(jar)) {
            try (JarFile jf = new JarFile(jar.toFile())) {
                classes = (int) jf.stream().filter(e -> e.getName().endsWith(".class")).count();
                Manifest mf = jf.getManifest();
                String name = mf == null ? null : mf.getMainAttributes().getValue("Automatic-Module-Name");
                if (packaging.equals("maven-archetype")) {
                    // a project template, never on a module path
                } else if (name == null || name.isBlank()) {
                    problems.add(id + ": " + jar.getFileName() + " has no Automatic-Module-Name in its manifest");
                } else if (!MODULE_NAME.matcher(name).matches()) {
                    problems.add(id + ": Automatic-Module-Name '" + name + "' is not a valid module name");
                } else {
                    String other = moduleNames.putIfAbsent(name, id);
                    if (other != null) {
                        problems.add(id + ": Automatic-Module-Name " + name + " is also " + other + "'s");
                    }
                }
                for (String entry : requiredEntries.getOrDefault(pom.groupId() + ":" + pom.artifactId(), List.of())) {
                    if (jf.getEntry(entry) == null) {
                        problems.add(id + ": " + jar.getFileName() + " lacks " + entry);
                    }
                }
            } catch (IOException e) {
                problems.add(id + ": " + jar.getFileName() + " is not a readable jar: " + e.getMessage());
            }
        }
        Path sources = pom.dir().resolve(base + "-sources.jar");
        if (classes > 0 && Files.isRegularFile(sources) && !hasEntry(id, sources, n -> n.endsWith(".java"))) {
            problems.add(id + ": " + sources.getFileName() + " has no .java file");
        }
        Path javadoc = pom.dir().resolve(base + "-javadoc.jar");
        if (Files.isRegularFile(javadoc)) {
            if (!hasEntry(id, javadoc, n -> !n.endsWith("/") && !n.startsWith("META-INF/"))) {
                problems.add(id + ": " + javadoc.getFileName() + " is empty");
            } else if (classes > 0 && !hasEntry(id, javadoc, n -> n.equals("index.html"))) {
                problems.add(id + ": " + javadoc.getFileName() + " has no index.html");
            }
        }
    }

    private boolean hasEntry(String id, Path zip, java.util.function.Predicate<String> test) {
        try (ZipFile z = new ZipFile(zip.toFile())) {
            return z.stream().map(ZipEntry::getName).anyMatch(test);
        } catch (IOException e) {
            problems.add(id + ": " + zip.getFileName() + " is not a readable zip: " + e.getMessage());
            return true;
        }
    }

    /** Every published module of the reactor at sourceRoot is staged; no unpublished one is. */
    private void checkAgainstReactor() {
        Map<String, Boolean> modules = new TreeMap<>();
        try {
            collectModules(sourceRoot, modules);
        } catch (Exception e) {
            problems.add("cannot read the reactor at " + sourceRoot + ": " + e.getMessage());
            return;
        }
        Set<String> staged = new TreeSet<>();
        poms.values().forEach(p -> staged.add(p.groupId() + ":" + p.artifactId()));
        modules.forEach((ga, published) -> {
            if (published && !staged.contains(ga)) {
                problems.add(ga + ": a published module of the reactor is not staged");
            } else if (!published && staged.contains(ga)) {
                problems.add(ga + ": staged, but the module says reverb.unpublished=true");
            }
        });
    }

    private static void collectModules(Path dir, Map<String, Boolean> out) throws Exception {
        Pom pom = Pom.read(dir.resolve("pom.xml"), dir);
        boolean unpublished = "true".equals(pom.properties().get("reverb.unpublished"))
            || "true".equals(pom.properties().get("maven.deploy.skip"));
        out.put(pom.groupId() + ":" + pom.artifactId(), !unpublished);
        Element modules = Pom.child(pom.root(), "modules");
        if (modules != null) {
            for (Element m : Pom.children(modules, "module")) {
                collectModules(dir.resolve(m.getTextContent().trim()).normalize(), out);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    private String rootGroup() {
        return poms.values().stream().filter(p -> p.parent() == null).map(Pom::groupId).findFirst().orElse("");
    }

    /** The pom, then its staged parents, nearest first. */
    private List<Pom> chain(Pom pom) {
        List<Pom> chain = new ArrayList<>();
        for (Pom p = pom; p != null && chain.size() < 20; ) {
            chain.add(p);
            Element parent = p.parent();
            p = parent == null ? null : poms.get(Pom.text(parent, "groupId", "") + ":"
                + Pom.text(parent, "artifactId", "") + ":" + Pom.text(parent, "version", ""));
        }
        return chain;
    }

    private String inherited(Pom pom, java.util.function.Function<Pom, String> get) {
        return chain(pom).stream().map(get).filter(s -> !s.isBlank()).findFirst().orElse("");
    }

    private Element inheritedElement(Pom pom, String name) {
        return chain(pom).stream().map(p -> Pom.child(p.root(), name)).filter(e -> e != null).findFirst().orElse(null);
    }

    /** Properties as a consumer's Maven sees them: the parents', overridden by the child's, plus project.*. */
    private Map<String, String> properties(Pom pom) {
        List<Pom> chain = chain(pom);
        Map<String, String> props = new HashMap<>();
        for (int i = chain.size() - 1; i >= 0; i--) {
            props.putAll(chain.get(i).properties());
        }
        props.put("project.version", pom.version());
        props.put("pom.version", pom.version());
        props.put("version", pom.version());
        props.put("project.groupId", pom.groupId());
        props.put("project.artifactId", pom.artifactId());
        if (pom.parent() != null) {
            props.put("project.parent.version", Pom.text(pom.parent(), "version", ""));
        }
        return props;
    }

    private static String interpolate(String value, Map<String, String> props) {
        String v = value;
        for (int depth = 0; depth < 10 && v.contains("${"); depth++) {
            Matcher m = PROPERTY.matcher(v);
            StringBuilder sb = new StringBuilder();
            boolean changed = false;
            while (m.find()) {
                String r = props.get(m.group(1));
                changed |= r != null;
                m.appendReplacement(sb, Matcher.quoteReplacement(r == null ? m.group() : r));
            }
            m.appendTail(sb);
            v = sb.toString();
            if (!changed) {
                break;
            }
        }
        return v;
    }

    private static String ga(Element dep) {
        return Pom.text(dep, "groupId", "") + ":" + Pom.text(dep, "artifactId", "");
    }

    static String digest(Path file, String algorithm) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance(algorithm.equals("sha1") ? "SHA-1" : "MD5");
            try (InputStream in = Files.newInputStream(file)) {
                byte[] buf = new byte[65536];
                for (int n; (n = in.read(buf)) > 0; ) {
                    md.update(buf, 0, n);
                }
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One pom file, read as XML (no Maven model: only what the checks need). */
    record Pom(Element root, Path dir) {

        static Pom read(Path file, Path dir) throws Exception {
            DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
            f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            f.setNamespaceAware(false);
            javax.xml.parsers.DocumentBuilder builder = f.newDocumentBuilder();
            builder.setErrorHandler(new org.xml.sax.helpers.DefaultHandler() {
                @Override
                public void fatalError(org.xml.sax.SAXParseException e) throws org.xml.sax.SAXException {
                    throw e; // reported as a problem with the pom, not printed by the parser as well
                }
            });
            Document doc = builder.parse(file.toFile());
            return new Pom(doc.getDocumentElement(), dir);
        }

        Element parent() {
            return child(root, "parent");
        }

        String groupId() {
            String g = text(root, "groupId", "");
            return g.isEmpty() && parent() != null ? text(parent(), "groupId", "") : g;
        }

        String artifactId() {
            return text(root, "artifactId", "");
        }

        String version() {
            String v = text(root, "version", "");
            return v.isEmpty() && parent() != null ? text(parent(), "version", "") : v;
        }

        String gav() {
            return groupId() + ":" + artifactId() + ":" + version();
        }

        String text(String name, String dflt) {
            return text(root, name, dflt);
        }

        Map<String, String> properties() {
            Map<String, String> props = new LinkedHashMap<>();
            Element p = child(root, "properties");
            if (p != null) {
                for (Node n = p.getFirstChild(); n != null; n = n.getNextSibling()) {
                    if (n instanceof Element e) {
                        props.put(e.getTagName(), e.getTextContent().trim());
                    }
                }
            }
            return props;
        }

        List<Element> dependencies() {
            return grandChildren(root, "dependencies", "dependency");
        }

        List<Element> managedDependencies() {
            Element dm = child(root, "dependencyManagement");
            return dm == null ? List.of() : grandChildren(dm, "dependencies", "dependency");
        }

        List<Element> plugins() {
            List<Element> all = new ArrayList<>();
            Element build = child(root, "build");
            if (build != null) {
                all.addAll(grandChildren(build, "plugins", "plugin"));
                Element pm = child(build, "pluginManagement");
                if (pm != null) {
                    all.addAll(grandChildren(pm, "plugins", "plugin"));
                }
            }
            return all;
        }

        /** The repositories a consumer's Maven may use: top level and in profiles. */
        List<String> repositoryUrls() {
            List<Element> holders = new ArrayList<>(List.of(root));
            Element profiles = child(root, "profiles");
            if (profiles != null) {
                holders.addAll(children(profiles, "profile"));
            }
            List<String> urls = new ArrayList<>();
            for (Element h : holders) {
                for (Element r : grandChildren(h, "repositories", "repository")) {
                    urls.add(text(r, "url", ""));
                }
                for (Element r : grandChildren(h, "pluginRepositories", "pluginRepository")) {
                    urls.add(text(r, "url", ""));
                }
            }
            return urls;
        }

        static Element child(Element parent, String name) {
            for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n instanceof Element e && e.getTagName().equals(name)) {
                    return e;
                }
            }
            return null;
        }

        static List<Element> children(Element parent, String name) {
            List<Element> list = new ArrayList<>();
            for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n instanceof Element e && e.getTagName().equals(name)) {
                    list.add(e);
                }
            }
            return list;
        }

        static List<Element> grandChildren(Element parent, String name, String childName) {
            Element c = child(parent, name);
            return c == null ? List.of() : children(c, childName);
        }

        static String text(Element parent, String name, String dflt) {
            Element c = child(parent, name);
            return c == null ? dflt : c.getTextContent().trim();
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Self-test: a good layout passes; each broken one is reported with the expected problem.

    private static final String GOOD_POM = """
        <project>
          <modelVersion>4.0.0</modelVersion>
          <groupId>org.example.rc</groupId><artifactId>lib</artifactId><version>1.0.0</version>
          <name>Lib</name><description>A library</description><url>https://lib.test/</url>
          <licenses><license><name>Apache-2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0.txt</url></license></licenses>
          <developers><developer><name>Someone</name></developer></developers>
          <scm><connection>scm:git:https://lib.test/lib.git</connection><url>https://lib.test/lib</url></scm>
          <properties><dep.version>2.0</dep.version></properties>
          <dependencies>
            <dependency><groupId>org.example.other</groupId><artifactId>dep</artifactId><version>${dep.version}</version></dependency>
          </dependencies>
        </project>
        """;

    private static boolean selfTest() throws Exception {
        record Case(String name, String expected, Consumer<Path> breakIt) { }
        List<Case> cases = List.of(
            new Case("good layout", null, d -> { }),
            new Case("missing sources jar", "missing lib-1.0.0-sources.jar",
                d -> delete(d.resolve("lib-1.0.0-sources.jar"))),
            new Case("missing javadoc jar", "missing lib-1.0.0-javadoc.jar",
                d -> delete(d.resolve("lib-1.0.0-javadoc.jar"))),
            new Case("bad sha1", "bad checksum", d -> write(d.resolve("lib-1.0.0.jar.sha1"), "0".repeat(40))),
            new Case("bad md5", "bad checksum", d -> write(d.resolve("lib-1.0.0.pom.md5"), "0".repeat(32))),
            new Case("jar changed after its checksums", "bad checksum",
                d -> write(d.resolve("lib-1.0.0.jar"), "not the jar that was summed")),
            new Case("missing signature", "is not signed", d -> delete(d.resolve("lib-1.0.0.jar.asc"))),
            new Case("missing md5", "has no .md5", d -> delete(d.resolve("lib-1.0.0-sources.jar.md5"))),
            new Case("SNAPSHOT release", "SNAPSHOT version", d -> restage(d, "1.0.0-SNAPSHOT", GOOD_POM, true)),
            new Case("dependency on a SNAPSHOT", "is a SNAPSHOT (2.0-SNAPSHOT)",
                d -> restage(d, "1.0.0", GOOD_POM.replace("<dep.version>2.0<", "<dep.version>2.0-SNAPSHOT<"), true)),
            new Case("dependency version nobody defines", "version no pom defines",
                d -> restage(d, "1.0.0", GOOD_POM.replace("<properties><dep.version>2.0</dep.version></properties>", ""),
                    true)),
            new Case("repository Central does not mirror", "names repository",
                d -> restage(d, "1.0.0", GOOD_POM.replace("<dependencies>",
                    "<repositories><repository><id>x</id><url>https://repo.test/maven</url></repository></repositories>"
                        + "<dependencies>"), true)),
            new Case("no licence", "no <licenses>",
                d -> restage(d, "1.0.0", GOOD_POM.replaceAll("<licenses>.*</licenses>", ""), true)),
            new Case("no scm", "no <scm>", d -> restage(d, "1.0.0", GOOD_POM.replaceAll("<scm>.*</scm>", ""), true)),
            new Case("no Automatic-Module-Name", "no Automatic-Module-Name",
                d -> restage(d, "1.0.0", GOOD_POM, false)));
        boolean allHeld = true;
        for (Case c : cases) {
            Path tmp = Files.createTempDirectory("release-check-self-test");
            try {
                Path dir = tmp.resolve("org/example/rc/lib/1.0.0");
                stage(dir, "1.0.0", GOOD_POM, true);
                c.breakIt().accept(dir);
                ReleaseCheck check = new ReleaseCheck(tmp);
                check.run();
                boolean held = c.expected() == null ? check.problems.isEmpty()
                    : check.problems.stream().anyMatch(p -> p.contains(c.expected()));
                allHeld &= held;
                System.out.println((held ? "held   " : "BROKE  ") + c.name() + (c.expected() == null
                    ? (held ? ": passes" : ": reported " + check.problems)
                    : (held ? ": reported" : ": expected '" + c.expected() + "', got " + check.problems)));
            } finally {
                try (Stream<Path> walk = Files.walk(tmp)) {
                    walk.sorted(Comparator.reverseOrder()).forEach(ReleaseCheck::delete);
                }
            }
        }
        System.out.println("self-test: " + (allHeld ? "PASSED" : "FAILED"));
        return allHeld;
    }

    /** Removes the staged files and stages a version again (its directory named for the version). */
    private static void restage(Path dir, String version, String pom, boolean moduleName) {
        try (Stream<Path> list = Files.list(dir)) {
            list.forEach(ReleaseCheck::delete);
            Path target = dir.resolveSibling(version);
            delete(dir);
            stage(target, version, pom.replace("<version>1.0.0</version>", "<version>" + version + "</version>"),
                moduleName);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void stage(Path dir, String version, String pom, boolean moduleName) {
        try {
            Files.createDirectories(dir);
            String base = "lib-" + version;
            Manifest mf = new Manifest();
            mf.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
            if (moduleName) {
                mf.getMainAttributes().putValue("Automatic-Module-Name", "org.example.rc.lib");
            }
            Files.writeString(dir.resolve(base + ".pom"), pom);
            zip(dir.resolve(base + ".jar"), mf, Map.of("org/example/rc/Lib.class", "\u00ca\u00fe"));
            zip(dir.resolve(base + "-sources.jar"), null, Map.of("org/example/rc/Lib.java", "class Lib {}"));
            zip(dir.resolve(base + "-javadoc.jar"), null, Map.of("index.html", "<html></html>"));
            for (String f : List.of(".pom", ".jar", "-sources.jar", "-javadoc.jar")) {
                Path file = dir.resolve(base + f);
                write(dir.resolve(base + f + ".asc"), "-----BEGIN PGP SIGNATURE-----\n(self-test)\n");
                for (String sum : CHECKSUMS) {
                    write(dir.resolve(base + f + "." + sum), digest(file, sum));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void zip(Path file, Manifest mf, Map<String, String> entries) throws IOException {
        try (OutputStream out = Files.newOutputStream(file); ZipOutputStream zip = new ZipOutputStream(out)) {
            if (mf != null) {
                zip.putNextEntry(new ZipEntry("META-INF/MANIFEST.MF"));
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                mf.write(bytes);
                zip.write(bytes.toByteArray());
            }
            for (Map.Entry<String, String> e : entries.entrySet()) {
                zip.putNextEntry(new ZipEntry(e.getKey()));
                zip.write(e.getValue().getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private static void write(Path file, String text) {
        try {
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void delete(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
