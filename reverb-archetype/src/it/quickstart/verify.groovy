// Runs README.md's two-terminal recipe against the project that invocations 1 and 2 generated and built:
//   java -jar target/hello-reverb-1.0-SNAPSHOT.jar server       (terminal 1)
//   java -jar target/hello-reverb-1.0-SNAPSHOT.jar client       (terminal 2)
// with no JVM flag on the command line: the jar's manifest must carry Add-Exports and the class path.
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit

def project = new File(basedir, 'hello-reverb')
def jar = new File(project, 'target/hello-reverb-1.0-SNAPSHOT.jar')
assert jar.isFile() : "not built: $jar"
def java = new File(System.getProperty('java.home'), 'bin/java').path
// The generated project's default kind of address (reverb://, which settles on shm here), on a port of our own:
// other builds on this host may run the same test.
def port = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()).withCloseable { it.localPort }
def uri = "reverb://127.0.0.1:${port}"

def server = new ProcessBuilder(java, '-jar', jar.path, 'server', uri)
    .directory(project).redirectErrorStream(true).start()
def serverLines = new LinkedBlockingQueue<String>()
Thread.start { server.inputStream.newReader().eachLine { serverLines.put(it) } }
try
{
    def line = serverLines.poll(60, TimeUnit.SECONDS)
    assert line != null && line.startsWith('Greeter listening on ') : "server did not start: $line ${serverLines.toList()}"

    def client = new ProcessBuilder(java, '-jar', jar.path, 'client', uri, 'Ada')
        .directory(project).redirectErrorStream(true).start()
    def output = client.inputStream.text
    assert client.waitFor(60, TimeUnit.SECONDS) : 'client did not exit'
    assert client.exitValue() == 0 : "client failed: $output"
    assert output.readLines() == ['Hello, Ada!', 'Hello #1, Ada!', 'Hello #2, Ada!', 'Hello #3, Ada!'] : "unexpected output: $output"
    println "two-terminal recipe: client printed ${output.readLines()}"
}
finally
{
    server.destroy()   // SIGTERM: the server's shutdown hook shuts it down gracefully
    assert server.waitFor(30, TimeUnit.SECONDS) : 'server did not stop on SIGTERM'
}
true
