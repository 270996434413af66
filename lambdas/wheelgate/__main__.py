import sys

from wheelgate.cli.main import main

sys.exit(main())
