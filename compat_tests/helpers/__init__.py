"""What the test rooms share: broker and cluster processes, the raw protocol client, real-client drivers, waits."""
