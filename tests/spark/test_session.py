"""The Spark session the refresh uses: its settings reach the JVM."""

from offsets.spark.session import DRIVER_JAVA_OPTIONS


def test_the_driver_jvm_compiles_with_c1_only_and_keeps_a_full_size_code_cache(spark):
    """The options must be on the JVM's command line (they cannot be set once it runs)."""
    jvm = spark._jvm
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert DRIVER_JAVA_OPTIONS.split() == [
        "-XX:TieredStopAtLevel=1",
        "-XX:ReservedCodeCacheSize=240m",
    ]
    assert all(option in arguments for option in DRIVER_JAVA_OPTIONS.split())
    # What the JVM made of them: without the second, C1 alone leaves 48 MB, which a long
    # session fills.
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert hotspot.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert int(hotspot.getVMOption("ReservedCodeCacheSize").getValue()) == 240 * 2**20
