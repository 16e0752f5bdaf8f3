# Sourced by the .ci service scripts. apt_install_quietly PACKAGE...: installs Debian packages whose
# postinst scripts would start daemons through the init system, keeping them from doing so for the
# install with a policy-rc.d (left in place when the image already ships one, as Docker-like images do).
apt_install_quietly() {
  local own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  if ((own_policy)); then rm -f /usr/sbin/policy-rc.d; fi
}
