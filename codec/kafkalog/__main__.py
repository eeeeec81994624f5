import sys

from kafkalog.tools.cli import main

if __name__ == "__main__":  # not when a worker process (-j) imports the main module again
    sys.exit(main())
