import com.google.protobuf.gradle.id

plugins {
    java
    application
    id("com.google.protobuf")
}

val reverbVersion: String by project
val protobufVersion: String by project
val slf4jVersion: String by project
val junitVersion: String by project
val assertjVersion: String by project
val reactorVersion: String by project

// Agrona (inside Reverb's transports) needs this in every JVM that runs Reverb: tests, `gradle run`, the jar.
val reverbJvmArgs = listOf("--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED")

java {
    toolchain { languageVersion.set(JavaLanguageVersion.of(17)) }
}

// The very sources of the Maven examples module, so both builds build the same thing.
sourceSets {
    main {
        proto { srcDir("../src/main/proto") }
        java { srcDir("../src/main/java") }
    }
    test {
        proto { srcDir("../src/test/proto") }
        java {
            srcDir("../src/test/java")
            // Checks this script from the Maven build; it has no meaning inside Gradle.
            exclude("io/reverb/examples/gradle/**")
        }
    }
}

dependencies {
    // One version for every Reverb artifact.
    implementation(platform("io.reverb:reverb-bom:$reverbVersion"))
    implementation("io.reverb:reverb-rpc-core")
    implementation("io.reverb:reverb-transport")
    implementation("com.google.protobuf:protobuf-java:$protobufVersion")
    runtimeOnly("org.slf4j:slf4j-simple:$slf4jVersion")

    testImplementation("org.junit.jupiter:junit-jupiter:$junitVersion")
    testRuntimeOnly("org.junit.platform:junit-platform-launcher")
    testImplementation("org.assertj:assertj-core:$assertjVersion")
    testImplementation("io.projectreactor:reactor-test:$reactorVersion")
}

protobuf {
    protoc {
        artifact = "com.google.protobuf:protoc:$protobufVersion"
    }
    plugins {
        // The Reverb protoc plugin is a Java program: its self-contained "standalone" jar. For a .jar artifact
        // the protobuf Gradle plugin writes a small script that runs it with `java -jar`.
        id("reverb") {
            artifact = "io.reverb:reverb-codegen-plugin:$reverbVersion:standalone@jar"
        }
    }
    generateProtoTasks {
        all().configureEach {
            plugins {
                id("reverb")
            }
        }
    }
}

tasks.test {
    useJUnitPlatform()
    jvmArgs(reverbJvmArgs)
}

application {
    mainClass.set(providers.gradleProperty("mainClass").orElse("io.reverb.examples.helloworld.HelloWorldServer"))
    applicationDefaultJvmArgs = reverbJvmArgs
}

tasks.jar {
    manifest {
        attributes("Add-Exports" to "java.base/jdk.internal.misc")
    }
}
