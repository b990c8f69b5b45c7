/*
 * jmeter-xstream.java - run JMeter (non-GUI) with its XStream told to
 * read any class, for Debian's JMeter 2.13, whose plans XStream 1.4.20
 * (the system's, since 1.4.18 refusing every class not allowed) cannot
 * load: "ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper".
 * JMeter's two XStream instances (SaveService.JMXSAVER, JTLSAVER) are
 * given AnyTypePermission, then JMeter starts as its own launcher would.
 * Java's source launcher runs it (java -cp JMETER_JARS jmeter-xstream.java
 * ARGS): nothing to build.  Used by bench/freight-jmeter.sh.
 */
import java.lang.reflect.Field;

public class JMeterXStream {
    public static void main(String[] args) throws Exception {
        String home = System.getProperty("jmeter.home", "/usr/share/jmeter");
        Class<?> u = Class.forName("org.apache.jmeter.util.JMeterUtils");
        u.getMethod("setJMeterHome", String.class).invoke(null, home);
        u.getMethod("loadJMeterProperties", String.class).invoke(null, home + "/bin/jmeter.properties");
        Class<?> ss = Class.forName("org.apache.jmeter.save.SaveService");
        Class<?> xs = Class.forName("com.thoughtworks.xstream.XStream");
        Class<?> tp = Class.forName("com.thoughtworks.xstream.security.TypePermission");
        Object any = Class.forName("com.thoughtworks.xstream.security.AnyTypePermission").getField("ANY").get(null);
        for (String name : new String[] {"JMXSAVER", "JTLSAVER"}) {
            Field f = ss.getDeclaredField(name);
            f.setAccessible(true);
            xs.getMethod("addPermission", tp).invoke(f.get(null), any);
        }
        Class<?> j = Class.forName("org.apache.jmeter.JMeter");
        j.getMethod("start", String[].class).invoke(j.getDeclaredConstructor().newInstance(), (Object) args);
    }
}
