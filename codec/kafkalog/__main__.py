import sys

from kafkalog.tools.cli import main

sys.exit(main())
