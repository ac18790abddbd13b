"""Operating a broker: configs, topics, quotas, metrics, the console and the CLI."""
