package dev.offsetsdashboard.connectors;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink that keeps its offsets outside Connect, as JDBC/HDFS/S3-style sinks with exactly-once
 * delivery do: its tasks commit nothing to the consumer group and resume from their own file.
 */
public class ExternalOffsetsSinkConnector extends SinkConnector {
    static final String FILE = "file";
    static final String OFFSETS_FILE = "offsets.file";
    static final ConfigDef CONFIG = new ConfigDef()
        .define(FILE, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The file the records' values are appended to, one per line.")
        .define(OFFSETS_FILE, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The file (Java properties) holding the next offset of every topic-partition written.");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return ExternalOffsetsSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        // One task: the files are shared, and one writer keeps them consistent.
        List<Map<String, String>> configs = new ArrayList<>();
        configs.add(props);
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1.0.0";
    }
}
