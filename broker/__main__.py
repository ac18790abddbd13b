from broker.cli.main import main

main()
