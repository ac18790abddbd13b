"""The console page on the metrics port: /console and the JSON endpoints it reads (/api/...)."""
