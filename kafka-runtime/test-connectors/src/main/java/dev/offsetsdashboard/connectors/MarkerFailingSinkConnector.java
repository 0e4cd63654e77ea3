package dev.offsetsdashboard.connectors;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink that appends each record's value to a file and fails, for good, on a record whose
 * value is the marker: the "poison record" an on-call person has to find and skip. Its offsets
 * are Connect's own (the consumer group connect-&lt;name&gt;), committed as usual.
 */
public class MarkerFailingSinkConnector extends SinkConnector {
    static final String FILE = "file";
    static final String FAIL_ON_VALUE = "fail.on.value";
    static final ConfigDef CONFIG = new ConfigDef()
        .define(FILE, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The file the records' values are appended to, one per line.")
        .define(FAIL_ON_VALUE, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The value (as a string) that makes the task fail with a non-retriable error.");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return MarkerFailingSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        // One task: one writer keeps the file's lines in offset order per partition.
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
